/**
 * Ctrl-C at each step of a revert (pinned by a hold proxy on a chosen request, not by a timer), then
 * the command the revert printed, pasted into a shell as it is: every hint names `shardmove revert`
 * with the plan and the forward checkpoint (a path with spaces), and following them ends with every
 * item home, each by exactly one move of the revert. Judged from the sandbox's own records.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { CliResult } from './support/cli-harness.js';
import { BIN, movesOf, runCli, sandboxEnv, storagesOf, writePlan } from './support/cli-harness.js';
import type { SeenRequest, Trap } from './support/hold-proxy.js';
import { startProxiedSandbox } from './support/hold-proxy.js';

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

/** Runs a shell command line with `shardmove` on the PATH (this checkout's bin). */
function shell(line: string, cwd: string, env: Record<string, string>, bin: string): Promise<CliResult> {
  const child = spawn('/bin/sh', ['-c', line], {
    cwd,
    env: { ...process.env, ...env, PATH: `${bin}:${process.env.PATH ?? ''}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += String(c)));
  child.stderr.on('data', (c) => (stderr += String(c)));
  return new Promise((done) => child.on('exit', (code) => done({ code, stdout, stderr })));
}

describe('shardmove revert interrupted at each step (separate processes, real HTTP)', () => {
  it(
    'says how to continue with shardmove revert, and the command it names finishes the revert',
    { timeout: 150_000 },
    async () => {
      const { dir, sandbox, proxy } = await startProxiedSandbox(
        'revert-interrupt',
        ['--move-duration', '200', '--workers', '10'],
        { projects: 12, snippets: 3, groups: 2 },
      );
      const plan = writePlan(dir, { concurrency: 3 });
      const env = sandboxEnv(proxy.url);
      mkdirSync(join(dir, 'run state'));
      const forwardDb = join('run state', 'fwd one.db');
      const revertDb = join(dir, 'run state', 'fwd one.revert.db');
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'shardmove'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
      chmodSync(join(bin, 'shardmove'), 0o755);
      const before = new Map(
        await Promise.all(KINDS.map(async (k) => [k, await storagesOf(sandbox.url, LISTS[k])] as const)),
      );

      const forward = await runCli(['run', plan, '--state', forwardDb], { cwd: dir, env });
      expect(forward.code, forward.stderr).toBe(0);
      const forwardMoves = new Map(
        await Promise.all(KINDS.map(async (k) => [k, (await movesOf(sandbox.url, k)).length] as const)),
      );

      /** Starts `line` (through the shell), interrupts it with SIGINT once `trap` holds a request; returns its result. */
      const line = `shardmove revert plan.yaml --state 'run state/fwd one.db'`;
      const interruptAt = async (moment: string, trap: Trap): Promise<CliResult> => {
        let child: ChildProcess | undefined;
        const run = runCli(['revert', 'plan.yaml', '--state', forwardDb, '--yes'], {
          cwd: dir,
          env,
          onStart: (c) => (child = c),
        });
        await proxy.arm(trap);
        child!.kill('SIGINT');
        proxy.release();
        const r = await run;
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
      const status = await runCli(['status', 'plan.yaml', '--state', join('run state', 'fwd one.revert.db')], {
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

      // The printed command, pasted into a shell as it is.
      const last = await shell(`${line} --yes`, dir, env, bin);
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
    },
  );
});
