/**
 * A stop that comes between the read a write depends on and the write: the weights step reads the
 * instance's weights, then PUTs the merged ones. The read is held in a proxy between the run and the
 * sandbox (by construction, not by timing), the stop is asked for while it is held (control --stop,
 * the stop file, Ctrl-C), then the read is answered. Judged from the sandbox's own settings (its
 * weights are those of before) and every request the proxy passed (no PUT), the exit code and the
 * words; then `run` again writes them. The run and the sandbox are in this process on one simulated
 * clock (./support/sim-speedc.ts), which stands still while the read is held; Ctrl-C is the signal
 * of the command's context (main() turns SIGINT into it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, sandboxEnv, writePlan } from './support/cli-harness.js';
import type { SeenRequest } from './support/hold-proxy.js';
import type { SimResult } from './support/sim-harness.js';
import { startProxiedSimulation, stepClockUntil } from './support/sim-speedc.js';
import { has } from './support/stop-judge.js';

const SETTINGS = '/api/v4/application/settings';

async function sandboxWeights(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}${SETTINGS}`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}

/**
 * A run whose weights step's read (the third GET of the settings: pre-flight reads them, then the
 * step that records the weights of before) is held; resolves once it is.
 */
async function runHeldAtWeights(prefix: string) {
  const { dir, sim, proxy, arm, resume } = await startProxiedSimulation(
    prefix,
    { moveDurationMs: 20, workers: 20 },
    { projects: 2, snippets: 0, groups: 0 },
  );
  const plan = writePlan(dir);
  const env = sandboxEnv(proxy.url);
  const before = await sandboxWeights(sim.url);
  let reads = 0;
  // The clock stands still from the held read on (arm), until the test lets it go (`answer`).
  const held = arm({ match: (r) => r.method === 'GET' && r.url === SETTINGS && ++reads === 3, forward: false });
  const cmd = sim.start(['run', plan], { cwd: dir, env });
  await held;
  const file = join(dir, 'state', 'it.db');
  /** Answers the held read and lets the clock skip again. */
  const answer = async () => {
    resume();
    await proxy.letGo();
  };
  /** A command run while the read is held, the clock moved a little at a time until it ends. */
  const cli = async (...args: string[]): Promise<SimResult> => {
    let result: SimResult | null = null;
    void sim.start(args, { cwd: dir, env }).done.then((r) => (result = r));
    return (await stepClockUntil(
      sim.clock,
      () => result,
      (r) => r !== null,
    )) as SimResult;
  };
  return { dir, sim, proxy, plan, env, before, run: cmd.done, cmd, file, answer, cli };
}

const puts = (seen: readonly SeenRequest[]) => seen.filter((r) => r.method === 'PUT' && r.url === SETTINGS);

describe('a stop between the weights read and their PUT (one simulated clock, real HTTP)', () => {
  it('control --stop while the read is held: the PUT is never sent, exit 6; run again writes the weights', async () => {
    const h = await runHeldAtWeights('stop-weights');
    expect(h.before).not.toEqual({ cluster: 100, 'nfs-1': 0, 'nfs-2': 0, default: 0 });
    const asked = await h.cli('control', h.plan, '--stop');
    expect(asked.code, asked.stderr).toBe(0);
    // The run saw the stop while its read was still held; only then is the read answered.
    expect(await stepClockUntil(h.sim.clock, has(h.file, 'run.stopping'), (x) => x, 10_000)).toBe(true);
    await h.answer();
    const r: SimResult = await h.run;
    expect(r.code, r.stdout + r.stderr).toBe(6);
    expect(r.stdout).toMatch(
      /(^|\n)STOPPED on request \(shardmove control --stop\): nothing was in flight\n {2}step: weights /,
    );
    expect(r.stdout).not.toContain('Sent before the stop came');
    expect(puts(h.proxy.seen)).toEqual([]);
    expect(await sandboxWeights(h.sim.url)).toEqual(h.before);
    const log = readFileSync(join(h.dir, 'state', 'it.log'), 'utf8');
    expect(log).toMatch(/writing the weights: not sent, (a stop was asked for|the run is ending)/);
    expect(log).not.toContain('"weights written"');

    const again = await h.sim.shardmove(['run', h.plan], { cwd: h.dir, env: h.env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(puts(h.proxy.seen)).toHaveLength(1);
    expect(await sandboxWeights(h.sim.url)).toMatchObject({ cluster: 100, 'nfs-1': 0, 'nfs-2': 0, default: 0 });
  });

  it('the stop file dropped while the read is held: the PUT is never sent, exit 6', async () => {
    const h = await runHeldAtWeights('stop-weights-file');
    writeFileSync(`${h.file}.stop`, '');
    expect(await stepClockUntil(h.sim.clock, has(h.file, 'run.stopping'), (x) => x, 10_000)).toBe(true);
    await h.answer();
    const r = await h.run;
    expect(r.code, r.stdout + r.stderr).toBe(6);
    expect(r.stdout).toMatch(/(^|\n)STOPPED on request \(the stop file\)/);
    expect(puts(h.proxy.seen)).toEqual([]);
    expect(await sandboxWeights(h.sim.url)).toEqual(h.before);
  });

  it('Ctrl-C while the read is held: the PUT is never sent, exit 130', async () => {
    const h = await runHeldAtWeights('stop-weights-int');
    h.cmd.interrupt();
    // The run took the signal (it says so in its log) before the read is answered.
    const log = join(h.dir, 'state', 'it.log');
    expect(
      await stepClockUntil(
        h.sim.clock,
        () => readFileSync(log, 'utf8'),
        (t) => t.includes('waiting for the step in flight to return'),
        10_000,
      ),
    ).toContain('interrupted');
    await h.answer();
    const r = await h.run;
    expect(r.code, r.stdout + r.stderr).toBe(130);
    expect(puts(h.proxy.seen)).toEqual([]);
    expect(await sandboxWeights(h.sim.url)).toEqual(h.before);
  });

  it('a stop that comes once the PUT was sent: the weights are written and the report says so', async () => {
    const { dir, sim, proxy, arm, resume } = await startProxiedSimulation(
      'stop-weights-late',
      { moveDurationMs: 20, workers: 20 },
      { projects: 2, snippets: 0, groups: 0 },
    );
    const plan = writePlan(dir);
    const env = sandboxEnv(proxy.url);
    // The PUT was answered; the read back after it is held while the stop is asked for.
    let reads = 0;
    const held = arm({ match: (r) => r.method === 'GET' && r.url === SETTINGS && ++reads === 4, forward: false });
    const run = sim.start(['run', plan], { cwd: dir, env }).done;
    await held;
    expect(puts(proxy.seen)).toHaveLength(1);
    const file = join(dir, 'state', 'it.db');
    let asked: SimResult | null = null;
    void sim.shardmove(['control', plan, '--stop'], { cwd: dir, env }).then((x) => (asked = x));
    expect(
      (await stepClockUntil(
        sim.clock,
        () => asked,
        (x) => x !== null,
      ))!.code,
    ).toBe(0);
    expect(await stepClockUntil(sim.clock, has(file, 'run.stopping'), (x) => x, 10_000)).toBe(true);
    resume();
    await proxy.letGo();
    const r = await run;
    expect(await sandboxWeights(sim.url)).toMatchObject({ cluster: 100, 'nfs-1': 0, 'nfs-2': 0, default: 0 });
    expect(r.code, r.stdout + r.stderr).toBe(6);
    expect(r.stdout).toContain('Sent before the stop came:\n  - the weights were written');
  });
});
