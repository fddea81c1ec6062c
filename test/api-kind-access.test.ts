/**
 * Per-kind access: pre-flight's probe of how each kind can be found by storage, run
 * against the sandbox on every edition, tier and version where the answer differs. The probe is
 * read-only: no instance changes, whatever it finds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createInstanceApi } from '../src/api/instance.js';
import type { InstanceApi, KindAccessMode } from '../src/api/types.js';
import type { Kind } from '../src/plan/types.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { loadSeed } from '../src/sandbox/seed.js';
import type { Seed } from '../src/sandbox/seed-schema.js';

const TOKEN = 'glpat-sandbox-root-api-sudo-0001';
let sb: RunningSandbox | null = null;
let api: InstanceApi | null = null;

afterEach(async () => {
  await api?.close();
  await sb?.close();
  sb = null;
  api = null;
});

async function probe(
  instance: Partial<Seed['instance']>,
  counts: { snippets?: number; groups?: number } = {},
): Promise<Record<Kind, KindAccessMode>> {
  const seed = loadSeed();
  Object.assign(seed.instance, instance);
  seed.inventory = {
    generate: { ...seed.inventory.generate!, projects: 5, snippets: counts.snippets ?? 5, groups: counts.groups ?? 3 },
  };
  sb = await startSandbox({ seed });
  api = createInstanceApi({
    baseUrl: sb.url,
    credentials: { type: 'token', token: TOKEN },
    sudo: null,
    timeoutMs: 5000,
  });
  const { enterprise } = await api.version();
  const out = {} as Record<Kind, KindAccessMode>;
  for (const kind of ['projects', 'snippets', 'groups'] as const)
    out[kind] = (await api.kindAccess(kind, enterprise)).mode;
  const moves = await fetch(`${sb.url}/api/v4/snippet_repository_storage_moves`, {
    headers: { 'PRIVATE-TOKEN': TOKEN },
  });
  expect(await moves.json()).toEqual([]);
  return out;
}

describe('kind access probe against the sandbox', () => {
  it('EE Ultimate 17.11: every kind is listed by storage', async () => {
    expect(await probe({ tier: 'ultimate', version: '17.11.0' })).toEqual({
      projects: 'listing',
      snippets: 'listing',
      groups: 'listing',
    });
  });

  // GET /groups shows no storage without the group_wikis licence, but a lapsed licence keeps the
  // group wikis and the group move API still moves them: never assumed absent.
  it('EE Free: snippets listed; groups show no storage, so they go by move records (never skipped)', async () => {
    expect(await probe({ tier: 'free' })).toEqual({ projects: 'listing', snippets: 'listing', groups: 'records' });
  });

  it('Community Edition: snippet storage not exposed (move records), group moves do not exist', async () => {
    expect(await probe({ edition: 'ce', tier: 'free' })).toEqual({
      projects: 'listing',
      snippets: 'records',
      groups: 'unsupported',
    });
  });

  it('Community Edition without any snippet yet: /metadata says CE, so snippets still go by move records', async () => {
    expect(await probe({ edition: 'ce', tier: 'free' }, { snippets: 0 })).toEqual({
      projects: 'listing',
      snippets: 'records',
      groups: 'unsupported',
    });
  });

  // GET /groups?repository_storage= is declared from 16.3 (issue 419643); before, GitLab ignores
  // the unknown parameter and lists every group, which the probe on a storage that cannot exist shows.
  it('EE 16.2: no /snippets/all route yet and the group storage filter ignored, so both go by move records', async () => {
    expect(await probe({ tier: 'ultimate', version: '16.2.0' })).toMatchObject({
      snippets: 'records',
      groups: 'records',
    });
    const groups = await api!.kindAccess('groups', true);
    expect(groups.reason).toMatch(/ignores the repository_storage filter .*from 16\.3/);
  });

  it('EE 16.3: snippets and groups listed by storage', async () => {
    expect(await probe({ tier: 'ultimate', version: '16.3.0' })).toEqual({
      projects: 'listing',
      snippets: 'listing',
      groups: 'listing',
    });
  });
});
