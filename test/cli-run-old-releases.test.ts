/**
 * Releases older than an API the run relies on, end to end against a sandbox in this process on the
 * simulated clock (./support/sim-harness.ts; the run through the command line of the executable),
 * judged from the sandbox's own database and the CLI's output:
 * - Geo on 15.11 EE, a primary and a secondary: `GET /geo_sites` is no route (16.0) and
 *   `geoRegistriesBulkUpdate` is not in the schema (16.4), so the secondary is found through
 *   `GET /geo_nodes` and the report must say that it was not resynced and how to do it, never
 *   "no Geo secondary".
 * - Group wikis on 16.2 EE Ultimate: `GET /groups?repository_storage=` is declared from 16.3 and
 *   ignored before, so groups cannot be listed by storage; the dry run says so and how they go.
 */
import { appendFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { flat, fromDb, writePlan } from './support/cli-harness.js';
import { changedSimulation } from './support/sim-speeda.js';

describe('shardmove run with Geo on 15.11 EE (in this process, simulated clock)', { timeout: 60_000 }, () => {
  it('finds the secondary through GET /geo_nodes and reports it as not resynced, naming the way by hand', async () => {
    const { sim, dir, db, env } = await changedSimulation(
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
    const r = await sim.shardmove(['run', plan], { cwd: dir, env });
    const said = r.stdout + r.stderr;
    expect(r.code, said).toBe(0);
    expect(fromDb<{ n: number }>(db, "SELECT count(*) AS n FROM items WHERE storage <> 'cluster'")[0]?.n).toBe(0);
    expect(said).not.toContain('no Geo secondary');
    expect(flat(r.stdout)).toContain('"eu" (site 2): FAILED: this GitLab release has no API to resync Geo registries');
    expect(flat(r.stdout)).toMatch(/geoRegistriesBulkUpdate is GitLab 16\.4 and later/);
    expect(flat(r.stdout)).toContain('Resync all');
    expect(flat(r.stdout)).not.toContain('"primary" (site 1)');
    // The sandbox recorded no bulk action on any site: nothing was resynced, and nothing claims it was.
    expect(fromDb<{ n: number }>(db, 'SELECT count(*) AS n FROM geo_actions')[0]?.n).toBe(0);
  });

  it('16.2 EE Ultimate: the dry run says the group storage filter is ignored there and that group wikis go by move records', async () => {
    const { sim, dir, db, env } = await changedSimulation(
      'groups-16-2',
      { projects: 6, snippets: 2, groups: 4 },
      (seed) => {
        seed.setIn(['instance', 'version'], '16.2.0');
        seed.setIn(['instance', 'tier'], 'ultimate');
      },
    );
    const plan = writePlan(dir);
    const dry = await sim.shardmove(['run', plan, '--dry-run', '--state', join(dir, 'dry.db')], { cwd: dir, env });
    const said = dry.stdout + dry.stderr;
    expect(dry.code, said).toBe(0);
    expect(flat(said)).toMatch(
      /groups: GET \/api\/v4\/groups ignores the repository_storage filter on this instance \(GitLab declares the group filter from 16\.3/,
    );
    // The warning itself, its wrapped lines joined (it stands alone as a bullet of Warnings).
    expect(flat(said)).toMatch(/- groups: [^\n]*moved with one bulk move per source storage/);
    expect(fromDb<{ n: number }>(db, 'SELECT count(*) AS n FROM moves')[0]?.n).toBe(0);
  });
});
