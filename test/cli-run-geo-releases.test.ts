/**
 * Geo on a release before the Geo sites API and the registries bulk mutation, end to end: a real
 * `shardmove run` against a 15.11 EE sandbox process with a primary and a secondary. There
 * `GET /geo_sites` is no route (16.0) and `geoRegistriesBulkUpdate` is not in the schema (16.4), so
 * the secondary is found through `GET /geo_nodes` and the report must say that it was not
 * resynced and how to do it, never "no Geo secondary". Judged from the sandbox's own database.
 */
import { appendFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromDb, runCli, sandboxEnv, startSeededSandbox, writePlan } from './support/cli-harness.js';

describe('shardmove run with Geo on 15.11 EE (separate processes)', { timeout: 60_000 }, () => {
  it('finds the secondary through GET /geo_nodes and reports it as not resynced, naming the way by hand', async () => {
    const { sandbox, dir, db } = await startSeededSandbox(
      'geo-15-11',
      { projects: 12, snippets: 3, groups: 2 },
      (seed) => {
        seed.setIn(['instance', 'version'], '15.11.0');
        seed.set('geo_sites', [
          { id: 1, name: 'primary', url: 'https://gitlab.example.com/', primary: true },
          { id: 2, name: 'eu', url: 'https://eu.gitlab.example.com/' },
        ]);
      },
    );
    const plan = writePlan(dir);
    appendFileSync(plan, 'geo: { resync: true }\n');
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    const said = r.stdout + r.stderr;
    expect(r.code, said).toBe(0);
    expect(fromDb<{ n: number }>(db, "SELECT count(*) AS n FROM items WHERE storage <> 'cluster'")[0]?.n).toBe(0);
    expect(said).not.toContain('no Geo secondary');
    expect(r.stdout).toContain('"eu" (site 2): FAILED: this GitLab release has no API to resync Geo registries');
    expect(r.stdout).toMatch(/geoRegistriesBulkUpdate is GitLab 16\.4 and later/);
    expect(r.stdout).toContain('Resync all');
    expect(r.stdout).not.toContain('"primary" (site 1)');
    // The sandbox recorded no bulk action on any site: nothing was resynced, and nothing claims it was.
    expect(fromDb<{ n: number }>(db, 'SELECT count(*) AS n FROM geo_actions')[0]?.n).toBe(0);
  });
});
