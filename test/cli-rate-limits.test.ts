/**
 * GitLab's application rate limits, end to end: `shardmove run` against an 18.2 sandbox (and a
 * 17.5 one with the limits' feature flag on)
 * whose projects and groups API limits are tiny (two listing pages per 10 minutes), so that the
 * census, the drain's listings and its per-item reads all outrun them. The run must pace itself
 * (at most a few 429s in any window), show the hold with its end, never fail a step on a 429, and
 * end exit 0 with everything moved. The run reads the server's clock from its answers' Date.
 *
 * On the in-process harness (test/support/sim-harness.ts): the executable's command line and the
 * sandbox on one simulated clock, so the run's hold sleeps through the limits' windows (tens of
 * minutes of that clock) in the milliseconds its work takes. The subject is the pacing against the
 * instance's limits, not the process boundary.
 */
import { rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { sandboxEnv, tempDir, writeChangedSeed, writePlan } from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';

const HOLD = "HELD by the instance's rate limit until";

describe('application rate limits, small limits', { timeout: 180_000 }, () => {
  it.each([
    // 18.2 checks the limits it shows: paced from the start, so not one 429.
    { version: '18.2.0', flags: {}, refused: (n: number) => expect(n).toBe(0) },
    // 17.5 checks them only behind the flag, so the run paces a route only after its first 429.
    {
      version: '17.5.0',
      flags: { rate_limit_groups_and_projects_api: true },
      refused: (n: number) => expect(n).toBeGreaterThan(0),
    },
  ])('$version: the drain paces itself, shows the hold, and ends exit 0 with everything moved', async (c) => {
    const dir = tempDir('rate-limits');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const seed = writeChangedSeed(dir, { projects: 60, snippets: 4, groups: 4 }, (s) => {
      s.setIn(['instance', 'version'], c.version);
      s.setIn(['instance', 'feature_flags'], c.flags);
      s.setIn(['instance', 'rate_limits'], { projects_api: 3, project_api: 5, groups_api: 3, group_api: 5 });
    });
    const hits: { key: string; period: number }[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const line of String(chunk).split('\n').filter(Boolean)) {
            const e = JSON.parse(line) as { msg?: string; key?: string; period?: number };
            if (e.msg === 'application rate limit hit') hits.push({ key: String(e.key), period: Number(e.period) });
          }
          done();
        },
      }),
    );
    const sim = await startSimulation({ seed, moveDurationMs: 20, workers: 20, logger });
    const plan = writePlan(dir, { concurrency: 10 });
    const res = await sim.shardmove(['run', plan], { cwd: dir, env: sandboxEnv(sim.url) });
    const said = res.stdout + res.stderr;

    expect(res.code, said).toBe(0);
    expect(res.stdout.includes(HOLD), said).toBe(true);
    expect(res.stdout).toContain('DONE: every repository moved and verified');
    const left = sim.sandbox.state.db.prepare("SELECT kind, id FROM items WHERE storage <> 'cluster'").all();
    expect(left, said).toEqual([]);
    // It paces: a window sees at most a few refusals, not a hammering.
    const perWindow = new Map<string, number>();
    for (const h of hits) perWindow.set(`${h.key}:${h.period}`, (perWindow.get(`${h.key}:${h.period}`) ?? 0) + 1);
    expect(Math.max(0, ...perWindow.values()), JSON.stringify([...perWindow])).toBeLessThanOrEqual(3);
    c.refused(hits.length);
  });
});
