/**
 * Ctrl-C at each step of a revert (pinned by a hold proxy on a chosen request, not by a timer), then
 * the command the revert printed, pasted into a shell as it is: every hint names `shardmove revert`
 * with the plan and the forward checkpoint (a path with spaces), and following them ends with every
 * item home, each by exactly one move of the revert. Judged from the sandbox's own records.
 *
 * On the in-process harness (./support/sim-harness.ts), the sandbox and the commands on one
 * simulated clock, over real HTTP through the proxy: Ctrl-C is the command's interrupt (what the
 * executable's SIGINT handler does; a SIGINT to a revert process is test/cli-revert-only.test.ts's),
 * and the printed line goes through /bin/sh as pasted, whose words are the command that runs.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { movesOf, sandboxEnv, storagesOf, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import type { SeenRequest, Trap } from './support/hold-proxy.js';
import { startHoldProxy } from './support/hold-proxy.js';
import type { SimResult } from './support/sim-harness.js';
import { startSimulation } from './support/sim-harness.js';
import { shellWords } from './support/sim-speedb.js';

const KINDS = ['project', 'snippet', 'group'] as const;
const LISTS = { project: 'projects', snippet: 'snippets', group: 'groups' } as const;

function savedStep(file: string): string | null {
  if (!existsSync(file)) return null;
  try {
    const store = openCheckpoint(file, { readOnly: true });
    try {
      return (store.loadRun()?.snapshot as { context?: { step?: string } } | null)?.context?.step ?? null;
    } finally {
      store.close();
    }
  } catch {
    return null;
  }
}

describe('shardmove revert interrupted at each step (one simulated clock, real HTTP)', () => {
  it('says how to continue with shardmove revert, and the command it names finishes the revert', async () => {
    const dir = tempDir('revert-interrupt');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const sim = await startSimulation({
      seed: writeSeed(dir, { projects: 12, snippets: 3, groups: 2 }),
      moveDurationMs: 200,
      workers: 10,
    });
    const { sandbox } = sim;
    const proxy = await startHoldProxy(sim.url);
    onTestFinished(() => proxy.close());
    const plan = writePlan(dir, { concurrency: 3 });
    const env = sandboxEnv(proxy.url);
    mkdirSync(join(dir, 'run state'));
    const forwardDb = join('run state', 'fwd one.db');
    const revertDb = join(dir, 'run state', 'fwd one.revert.db');
    const before = new Map(
      await Promise.all(KINDS.map(async (k) => [k, await storagesOf(sandbox.url, LISTS[k])] as const)),
    );

    const forward = await sim.shardmove(['run', plan, '--state', forwardDb], { cwd: dir, env });
    expect(forward.code, forward.stderr).toBe(0);
    const forwardMoves = new Map(
      await Promise.all(KINDS.map(async (k) => [k, (await movesOf(sandbox.url, k)).length] as const)),
    );

    /** Starts the revert, interrupts it as Ctrl-C does once `trap` holds a request; returns its result. */
    const line = `shardmove revert plan.yaml --state 'run state/fwd one.db'`;
    const interruptAt = async (moment: string, trap: Trap): Promise<SimResult> => {
      const run = sim.start(['revert', 'plan.yaml', '--state', forwardDb, '--yes'], { cwd: dir, env });
      await proxy.arm(trap);
      run.interrupt();
      proxy.release();
      const r = await run.done;
      expect(r.code, `${moment}: ${r.stdout}${r.stderr}`).toBe(130);
      expect(r.stdout + r.stderr, moment).not.toMatch(/\brun again\b|internal error/);
      return r;
    };
    const api = (method: string, re: RegExp) => (r: SeenRequest) => r.method === method && re.test(r.url);
    const ITEM_READ = /^\/api\/v4\/(projects|snippets|groups)\/\d+(\?|$)/;
    const MOVES = /^\/api\/v4\/(projects|snippets|groups)\/\d+\/repository_storage_moves/;

    const reading = await interruptAt('reading the items', { match: api('GET', ITEM_READ), forward: false });
    expect(reading.stderr).toContain(`interrupted before the revert wrote anything. To revert: ${line}\n`);
    expect(existsSync(revertDb)).toBe(false);

    const hint = `interrupted; the revert's checkpoint is saved. To continue it: ${line}\n`;
    const weights = await interruptAt('writing the weights', {
      match: api('PUT', /^\/api\/v4\/application\/settings/),
      forward: false,
    });
    expect(weights.stderr).toContain(hint);
    expect(savedStep(revertDb)).toBe('weights');
    const status = await sim.shardmove(['status', 'plan.yaml', '--state', join('run state', 'fwd one.revert.db')], {
      cwd: dir,
      env,
    });
    expect(status.stdout).toContain('`shardmove revert PLAN` (with the forward checkpoint) again to continue it');
    expect(status.stdout).not.toContain('`run` again');

    const draining = await interruptAt('posting a move back', { match: api('POST', MOVES), forward: true });
    expect(draining.stderr).toContain(hint);
    const verifying = await interruptAt('verifying', {
      match: (r) => r.method === 'GET' && ITEM_READ.test(r.url) && savedStep(revertDb) === 'verify',
      forward: false,
    });
    expect(verifying.stderr).toContain(hint);

    // The printed command, pasted into a shell as it is: the words the shell makes of it run.
    const words = shellWords(`${line} --yes`, dir);
    expect(words).toEqual(['revert', 'plan.yaml', '--state', join('run state', 'fwd one.db'), '--yes']);
    const last = await sim.shardmove(words, { cwd: dir, env });
    expect(last.code, `${line}: ${last.stdout}${last.stderr}`).toBe(0);
    expect(last.stdout).toContain('REVERTED');

    for (const kind of KINDS) {
      const was = before.get(kind)!;
      expect(await storagesOf(sandbox.url, LISTS[kind]), kind).toEqual(was);
      const back = (await movesOf(sandbox.url, kind)).slice(forwardMoves.get(kind));
      const wentBack = [...was].filter(([, s]) => s !== 'cluster').map(([id]) => id);
      expect(
        back.map((m) => m.itemId).sort((a, b) => a - b),
        kind,
      ).toEqual(wentBack.sort((a, b) => a - b));
    }
  });
});
