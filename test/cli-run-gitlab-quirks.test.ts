/**
 * Fidelity, second pass, end to end: the sandbox does what GitLab does, and a real run against
 * it ends right, judged from the sandbox's own records.
 * - Project snippets GET /snippets/:id hides from an admin (their project's snippets disabled) are
 *   moved, never reported deleted, and verification passes.
 * - A Geo secondary the primary cannot reach (a release whose node proxy answers 200 {}) is a
 *   failed resync in the report, never "requested".
 * - Moves killed after the switch count as moved, and their source copies are listed with paths.
 *
 * On the in-process harness (test/support/sim-harness.ts): each command through the executable's
 * command line against the sandbox on one simulated clock (real HTTP), so moves, retries and polls
 * cost no real time. The subject is what the sandbox answers and what the run makes of it, not the
 * process boundary.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxOptions } from '../src/sandbox/index.js';
import { ADMIN_TOKEN, fromDb, sandboxEnv, storagesOf, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';

async function sandboxWith(
  name: string,
  change: (seed: ReturnType<typeof parseDocument>) => void,
  faults: SandboxOptions['faults'] = {},
) {
  const dir = tempDir(name);
  const seedFile = writeSeed(dir, { projects: 30, snippets: 30, groups: 3 });
  const doc = parseDocument(readFileSync(seedFile, 'utf8'));
  change(doc);
  writeFileSync(seedFile, doc.toString());
  const db = join(dir, 'sandbox.db');
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const sim = await startSimulation({ seed: seedFile, db, moveDurationMs: 20, workers: 10, faults });
  return { sim, sandbox: sim.sandbox, dir, db, env: sandboxEnv(sim.url) };
}

const notMoved = async (url: string) =>
  (
    await Promise.all(
      (['projects', 'snippets', 'groups'] as const).map(async (k) =>
        [...(await storagesOf(url, k)).values()].filter((s) => s !== 'cluster'),
      ),
    )
  ).flat();

describe('what GitLab hides or answers oddly, run end to end', { timeout: 90_000 }, () => {
  it('snippets an admin cannot GET are moved (a failed first move makes the run read them), none called deleted', async () => {
    const { sim, sandbox, dir, db, env } = await sandboxWith(
      'hidden-snippets',
      (seed) => {
        seed.setIn(['inventory', 'generate', 'project_snippet_fraction'], 1);
        seed.setIn(['inventory', 'generate', 'snippets_disabled_fraction'], 0.5);
      },
      { moveFailRate: 0.3, seed: 7 },
    );
    const hidden =
      fromDb<{ n: number }>(
        db,
        `SELECT count(*) AS n FROM items s JOIN items p ON p.kind = 'project' AND p.id = s.project_id
      WHERE s.kind = 'snippet' AND p.snippets_access_level = 'disabled'`,
      )[0]?.n ?? 0;
    expect(hidden).toBeGreaterThan(0);
    const plan = writePlan(dir);
    const r = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect([0, 3]).toContain(r.code);
    expect(r.stdout).toContain('Verification: passed');
    expect(r.stdout).not.toMatch(/deleted from the instance/);
    const checkpoint = join(dir, 'state', 'it.db');
    const left = fromDb<{ n: number }>(
      checkpoint,
      "SELECT count(*) AS n FROM items WHERE kind = 'snippets' AND state = 'left'",
    )[0]?.n;
    expect(left).toBe(0);
    // Retries happened (the faults), and no retried snippet was taken for gone and then found again.
    const types = fromDb<{ type: string }>(
      checkpoint,
      "SELECT type FROM events WHERE json_extract(data, '$.kind') = 'snippets'",
    ).map((e) => e.type);
    expect(types.filter((t) => t === 'item.retry').length).toBeGreaterThan(0);
    expect(types.filter((t) => t === 'item.not_on_source' || t === 'item.still_on_source')).toEqual([]);
    // Every snippet the run did not quarantine is on the destination, the hidden ones included.
    const quarantined = fromDb<{ id: number }>(
      join(dir, 'state', 'it.db'),
      "SELECT id FROM items WHERE kind = 'snippets' AND state = 'quarantined'",
    ).map((q) => q.id);
    const snippets = await storagesOf(sandbox.url, 'snippets');
    expect([...snippets].filter(([id, s]) => s !== 'cluster' && !quarantined.includes(id))).toEqual([]);
  });

  it('a Geo secondary the primary cannot reach is reported FAILED, the reachable one requested', async () => {
    const { sim, dir, env } = await sandboxWith('geo-unreachable', (seed) => {
      seed.setIn(['instance', 'version'], '16.11.0');
      seed.setIn(
        ['geo_sites'],
        [
          { id: 1, name: 'primary', url: 'https://gitlab.example.com/', primary: true },
          { id: 2, name: 'eu', url: 'https://eu.gitlab.example.com/' },
          { id: 4, name: 'apac', url: 'https://apac.gitlab.example.com/', reachable: false },
        ],
      );
    });
    const plan = writePlan(dir);
    writeFileSync(plan, `${readFileSync(plan, 'utf8').replace('verify: true', 'verify: true\ngeo: { resync: true }')}`);
    const r = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/"eu" \(site 2\): requested for\s+PROJECT_REPOSITORY_REGISTRY, /);
    expect(r.stdout).toMatch(/"apac" \(site 4\): FAILED: the primary could not reach this secondary/);
    expect(r.stdout).not.toMatch(/"apac" \(site 4\): requested/);
  });

  it('moves killed after the switch count as moved; their source copies are listed with their paths', async () => {
    const { sim, sandbox, dir, env } = await sandboxWith('after-switch', () => undefined, {
      failAfterSwitchRate: 0.3,
      seed: 3,
    });
    const plan = writePlan(dir);
    const r = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect(r.code, r.stderr).toBe(0);
    expect(await notMoved(sandbox.url)).toEqual([]);
    // What the sandbox says is left on the old storages, item by item.
    const stale: string[] = [];
    for (const kind of ['project', 'snippet', 'group'] as const) {
      const ids = [...(await storagesOf(sandbox.url, `${kind}s` as const)).keys()];
      for (const id of ids) {
        const res = await fetch(`${sandbox.url}/-/sandbox/items/${kind}/${id}`, {
          headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN },
        });
        const body = (await res.json()) as { stale_copies?: string[] };
        for (const s of body.stale_copies ?? []) stale.push(`${kind}s ${id} ${s}`);
      }
    }
    expect(stale.length).toBeGreaterThan(0);
    const status = await sim.shardmove(['status', plan, '--json'], { cwd: dir });
    const orphans = (
      JSON.parse(status.stdout) as { orphans: { kind: string; id: number; source: string; diskPaths: string[] }[] }
    ).orphans;
    expect(orphans.map((o) => `${o.kind} ${o.id} ${o.source}`).sort()).toEqual(stale.sort());
    expect(orphans.every((o) => o.diskPaths.length > 0)).toBe(true);
    expect(r.stdout).toMatch(/Source copies left behind \(\d+\)/);
  });
});
