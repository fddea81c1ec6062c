/**
 * The sandbox's seed and the plan of the release matrix's standard drain
 * (./release-scenario.ts) on one profile, and the destination's filesystem that makes its one
 * no-space real.
 */
import type { Seed } from '../../src/sandbox/seed-schema.js';
import { loadSeed } from '../../src/sandbox/seed.js';
import type { ItemKind, Profile, Release } from './release-profile.js';
import { releaseOf } from './release-profile.js';
import type { RoleIds } from './release-scenario.js';
import { DESTINATION, MAX_ATTEMPTS, ROLES, SHORT_MB, SOURCES, rolesOf } from './release-scenario.js';

/** The `--broken-items` of the drain: the roles that always fail their copy. */
export function brokenItems(ids: ReadonlyMap<string, number>): string[] {
  return ROLES.filter((r) => r.broken).map((r) => `${r.kind}:${ids.get(r.role)}`);
}

/**
 * The destination's filesystem: SHORT_MB less than everything the drain would land if every item
 * moved (each fork-network member's copy with its pool's objects, and a pool copy). Pre-flight counts
 * the big snippet as 10 MiB (GitLab gives no snippet size), so the drain "fits" by about 700 MiB; it
 * lands 1000 MiB, and the victim, last and alone on its source, finds less room than it needs,
 * whatever else failed before it (what does not land is far less than SHORT_MB).
 */
export function capacityOf(release: Release): number {
  const mb = rolesOf(release).reduce((a, r) => a + r.sizeMb, 0);
  const root = ROLES.find((r) => r.role === 'fork root')!.sizeMb;
  return (mb + 4 * root - SHORT_MB) * 1024 * 1024;
}

/** The sandbox's seed for a profile: the built-in seed with the standard inventory. */
export function seedFor(profile: Profile, ids: ReadonlyMap<string, number>): Seed {
  const release = releaseOf(profile);
  const seed = structuredClone(loadSeed());
  seed.instance.version = profile.version;
  seed.instance.edition = profile.edition;
  seed.instance.tier = profile.tier;
  seed.instance.storage_capacity = { ...seed.instance.storage_capacity, [DESTINATION]: capacityOf(release) };
  const id: RoleIds = (role) => ids.get(role)!;
  const items = (kind: ItemKind) =>
    rolesOf(release)
      .filter((r) => r.kind === kind)
      .map((r) => ({
        id: id(r.role),
        storage: r.storage,
        size_mb: r.sizeMb,
        ...(kind === 'project' ? { visibility: 'public' as const } : {}),
        ...r.fields?.(id),
      }));
  // Groups exist on CE too (they just have no wiki repository), so the CE drain meets them.
  const groups = ROLES.filter((r) => r.kind === 'group').map((r) => ({
    id: id(r.role),
    storage: r.storage,
    size_mb: r.sizeMb,
  }));
  seed.inventory = { projects: items('project'), snippets: items('snippet'), groups } as Seed['inventory'];
  return seed;
}

/**
 * The plan: every kind, three sources into the destination, short stuck limits, two attempts. In
 * the documented order, kind by kind and source by source (`move.order: by-kind`): the one real
 * no-space needs its victim last and alone on its source, which the one schedule (largest first
 * across every source) would move first, while the destination is still empty.
 */
export function planText(): string {
  return [
    'version: 1',
    'name: matrix',
    'instance:',
    '  url: ${SHARDMOVE_URL}',
    '  token: ${SHARDMOVE_TOKEN}',
    '  timeout: 10s',
    'move:',
    `  from: [${SOURCES.join(', ')}]`,
    `  to: ${DESTINATION}`,
    '  kinds: [projects, snippets, groups]',
    '  concurrency: 10',
    '  order: by-kind',
    `weights: { ${DESTINATION}: 100, ${SOURCES.map((s) => `${s}: 0`).join(', ')} }`,
    'poll: { interval: 100ms, stuck_scheduled_after: 5s, stuck_running_after: 5s, stuck_running_per_gb: 0s }',
    `retry: { max_attempts: ${MAX_ATTEMPTS}, backoff: 100ms }`,
    'verify: true',
    'prometheus: { url: "${PROMETHEUS_URL}" }',
    'capacity:',
    '  storages:',
    `    ${DESTINATION}: { free: 'node_filesystem_avail_bytes{mountpoint="/mnt/gitaly-cluster"}' }`,
    '',
  ].join('\n');
}
