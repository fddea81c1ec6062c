/**
 * Instance fidelity end to end: a real `shardmove run` against a sandbox that behaves as GitLab
 * does for Admin Mode, the monitoring IP allowlist and Geo. Each run's end state is judged from the
 * sandbox's own SQLite database (`--db`), not only through its API. The run and the sandbox are in
 * this process on one simulated clock (./support/sim-harness.ts), over real HTTP.
 */
import { appendFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { fromDb, sandboxEnv, writePlan } from './support/cli-harness.js';
import { changedSimulation } from './support/sim-speeda.js';

/** The built-in seed's token of root with the `api` and `admin_mode` scopes (sandbox-only value). */
const ROOT_ADMIN_MODE_TOKEN = 'glpat-sandbox-root-admin-mode-03';

/** As `startSeededSandbox`, in this process; `runCli` runs a command line on its clock. */
async function smallSandbox(name: string, change: (seed: Document) => void) {
  const { sim, dir, db } = await changedSimulation(name, { projects: 20, snippets: 5, groups: 4 }, change);
  const runCli = (args: string[], opts: { cwd: string; env: Record<string, string | undefined> }) =>
    sim.shardmove(args, opts);
  return { sandbox: sim.sandbox, dir, db, runCli };
}

const weightsIn = (db: string) =>
  (
    JSON.parse(fromDb<{ value: string }>(db, "SELECT value FROM meta WHERE key = 'settings'")[0]?.value ?? '{}') as {
      repository_storages_weighted: Record<string, number>;
    }
  ).repository_storages_weighted;
const moveCount = (db: string) => fromDb<{ n: number }>(db, 'SELECT count(*) AS n FROM moves')[0]?.n;
const notOnCluster = (db: string) =>
  fromDb<{ n: number }>(db, "SELECT count(*) AS n FROM items WHERE storage <> 'cluster'")[0]?.n;

describe('shardmove run against GitLab-faithful instance behaviour (one simulated clock, real HTTP)', () => {
  it('Admin Mode on, a Premium instance, a token without admin_mode: stops in pre-flight naming the scope, writes nothing; with the scope it completes', async () => {
    const { sandbox, dir, db, runCli } = await smallSandbox('admin-mode', (seed) => {
      seed.setIn(['instance', 'tier'], 'premium');
      seed.setIn(['instance', 'admin_mode'], true);
    });
    const weightsBefore = weightsIn(db);
    const plan = writePlan(dir);
    const refused = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    const said = refused.stdout + refused.stderr;
    expect(said).toContain('SHARDMOVE_PREFLIGHT_ADMIN_MODE');
    expect(said).toContain('"admin_mode" scope');
    // Nothing written: no move recorded, weights as seeded, every item where it was.
    expect(moveCount(db)).toBe(0);
    expect(weightsIn(db)).toEqual(weightsBefore);
    expect(fromDb<{ n: number }>(db, 'SELECT count(*) AS n FROM items WHERE read_only = 1')[0]?.n).toBe(0);

    rmSync(join(dir, 'state'), { recursive: true, force: true });
    const done = await runCli(['run', plan], {
      cwd: dir,
      env: { ...sandboxEnv(sandbox.url), SHARDMOVE_TOKEN: ROOT_ADMIN_MODE_TOKEN },
    });
    expect(done.code, done.stdout + done.stderr).toBe(0);
    expect(done.stdout).toContain('DONE: every repository moved and verified');
    expect(notOnCluster(db)).toBe(0);
    expect(weightsIn(db)).toEqual({ cluster: 100, 'nfs-1': 0, 'nfs-2': 0, default: 0 });
    expect(fromDb<{ state: string; n: number }>(db, 'SELECT state, count(*) AS n FROM moves GROUP BY state')).toEqual([
      { state: 'finished', n: expect.any(Number) },
    ]);
  });

  it('a monitoring allowlist without 127.0.0.1: stops at the storages step with the allowlist message, before any write', async () => {
    const { sandbox, dir, db, runCli } = await smallSandbox('allowlist', (seed) => {
      seed.setIn(['instance', 'monitoring_allowlist'], ['10.0.0.0/8']);
    });
    const weightsBefore = weightsIn(db);
    const plan = writePlan(dir);
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const said = r.stdout + r.stderr;
    expect(said).toContain('SHARDMOVE_STORAGE_READINESS_REFUSED');
    expect(said).toContain('monitoring IP allowlist');
    expect(moveCount(db)).toBe(0);
    expect(weightsIn(db)).toEqual(weightsBefore);
  });

  it("a Geo primary with two secondaries: completes; each secondary's registries are resynced, the primary's are not; the report lists both", async () => {
    const { sandbox, dir, db, runCli } = await smallSandbox('geo', (seed) => {
      seed.set('geo_sites', [
        { id: 1, name: 'primary', url: 'https://gitlab.example.com/', primary: true },
        { id: 2, name: 'eu', url: 'https://eu.gitlab.example.com/' },
        { id: 3, name: 'asia', url: 'https://asia.gitlab.example.com/' },
      ]);
    });
    const plan = writePlan(dir);
    appendFileSync(plan, 'geo: { resync: true }\n');
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(notOnCluster(db)).toBe(0);
    expect(r.stdout).toContain('"eu" (site 2): requested for');
    expect(r.stdout).toContain('"asia" (site 3): requested for');
    expect(r.stdout).not.toContain('"primary" (site 1)');
    const actions = fromDb<{ site_id: number | null; registry_class: string; action: string; registries: number }>(
      db,
      'SELECT site_id, registry_class, action, registries FROM geo_actions ORDER BY id',
    );
    const bySite = (id: number) =>
      actions
        .filter((a) => a.site_id === id)
        .map((a) => a.registry_class)
        .sort();
    const wanted = [
      'DESIGN_MANAGEMENT_REPOSITORY_REGISTRY',
      'GROUP_WIKI_REPOSITORY_REGISTRY',
      'PROJECT_REPOSITORY_REGISTRY',
      'PROJECT_WIKI_REPOSITORY_REGISTRY',
      'SNIPPET_REPOSITORY_REGISTRY',
    ];
    expect(bySite(2)).toEqual(wanted);
    expect(bySite(3)).toEqual(wanted);
    expect(actions.filter((a) => a.site_id !== 2 && a.site_id !== 3)).toEqual([]);
    expect(actions.every((a) => a.action === 'RESYNC_ALL')).toBe(true);
    expect(actions.find((a) => a.site_id === 2 && a.registry_class === 'PROJECT_REPOSITORY_REGISTRY')?.registries).toBe(
      20,
    );
  });
});
