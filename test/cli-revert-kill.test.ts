/**
 * `shardmove revert` killed with SIGKILL at named moments (pinned by a proxy that holds a chosen
 * request, not by sleeping), then run again until it ends: every item the forward run moved is
 * back where it was, each by exactly one move of the revert (no duplicate, nothing lost), and
 * nothing else was moved. Judged from the sandbox's own records.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { ADMIN_TOKEN, movesOf, runCli, sandboxEnv, storagesOf, writePlan } from './support/cli-harness.js';
import type { SeenRequest, Trap } from './support/hold-proxy.js';
import { startProxiedSandbox } from './support/hold-proxy.js';

const KINDS = ['project', 'snippet', 'group'] as const;
const LISTS = { project: 'projects', snippet: 'snippets', group: 'groups' } as const;

/** Item counts per state in a checkpoint (empty when it does not exist yet). */
function statesOf(file: string): Record<string, number> {
  if (!existsSync(file)) return {};
  try {
    const store = openCheckpoint(file, { readOnly: true });
    try {
      const out: Record<string, number> = {};
      for (const c of store.summary(Date.now()).counts) out[c.state] = (out[c.state] ?? 0) + c.n;
      return out;
    } finally {
      store.close();
    }
  } catch {
    return {};
  }
}

function savedStep(file: string): string | null {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return (store.loadRun()?.snapshot as { context?: { step?: string } } | null)?.context?.step ?? null;
  } finally {
    store.close();
  }
}

async function weightsOf(url: string): Promise<Record<string, number>> {
  const res = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  return ((await res.json()) as { repository_storages_weighted: Record<string, number> }).repository_storages_weighted;
}
const positive = (w: Record<string, number>) => Object.fromEntries(Object.entries(w).filter(([, v]) => v > 0));

describe('shardmove revert under kill -9 (separate processes, real HTTP)', () => {
  it(
    'killed while reading, after the weights, with a move created but unrecorded, and while polling; run again: all back, one move each',
    { timeout: 150_000 },
    async () => {
      const { dir, sandbox, proxy } = await startProxiedSandbox(
        'revert-kill',
        ['--move-duration', '300', '--workers', '10'],
        { projects: 16, snippets: 4, groups: 3 },
      );
      const plan = writePlan(dir, { concurrency: 3 });
      const env = sandboxEnv(proxy.url);
      const revertDb = join(dir, 'state', 'it.revert.db');
      const before = new Map(
        await Promise.all(KINDS.map(async (k) => [k, await storagesOf(sandbox.url, LISTS[k])] as const)),
      );
      const weightsBefore = await weightsOf(sandbox.url);

      const forward = await runCli(['run', plan], { cwd: dir, env });
      expect(forward.code, forward.stderr).toBe(0);
      const forwardMoves = new Map(
        await Promise.all(KINDS.map(async (k) => [k, (await movesOf(sandbox.url, k)).length] as const)),
      );

      /** Runs the revert until the proxy holds a request matching `trap`, then kill -9; checks where it died. */
      const killAt = async (moment: string, trap: Trap, step: string | null) => {
        let child: ChildProcess | undefined;
        let failure: unknown;
        const run = runCli(['revert', plan, '--yes'], { cwd: dir, env, onStart: (c) => (child = c) });
        const watchdog = setTimeout(() => {
          failure = new Error(`${moment}: no matching request within 50 s`);
          child?.kill('SIGKILL');
        }, 50_000);
        void proxy.arm(trap).then(() => child!.kill('SIGKILL'));
        const r = await run;
        clearTimeout(watchdog);
        proxy.release();
        if (failure) throw failure;
        expect(
          r.code,
          `${moment}: the revert ended on its own (${r.stdout}${r.stderr}) instead of being killed`,
        ).toBeNull();
        if (step === null) expect(statesOf(revertDb), `${moment}: nothing seeded yet`).toEqual({});
        else expect(savedStep(revertDb), moment).toBe(step);
      };
      const api = (method: string, re: RegExp) => (r: SeenRequest) => r.method === method && re.test(r.url);
      const ITEM_READ = /^\/api\/v4\/(projects|snippets|groups)\/\d+(\?|$)/;
      const MOVES = /^\/api\/v4\/(projects|snippets|groups)\/\d+\/repository_storage_moves/;

      // Before anything is written: the per-item reads that decide what goes back.
      await killAt('reading the items', { match: api('GET', ITEM_READ), forward: false }, null);
      // The weights reach the sandbox, the answer does not.
      await killAt(
        'weights written, answer lost',
        { match: api('PUT', /^\/api\/v4\/application\/settings/), forward: true },
        'weights',
      );
      // A move back is created and its id never recorded: the next process must find it, not POST again.
      await killAt('move created, id never recorded', { match: api('POST', MOVES), forward: true }, 'drain');
      expect(statesOf(revertDb).scheduling, 'an intent without a move id').toBeGreaterThan(0);
      await killAt(
        'polling moves in flight',
        {
          match: (r) => {
            if (r.method !== 'GET' || !/repository_storage_moves/.test(r.url)) return false;
            const s = statesOf(revertDb);
            return (s.scheduling ?? 0) === 0 && (s.in_flight ?? 0) > 0 && (s.moved ?? 0) > 0;
          },
          forward: false,
        },
        'drain',
      );

      const last = await runCli(['revert', plan, '--yes'], { cwd: dir, env });
      expect(last.code, `${last.stdout}${last.stderr}`).toBe(0);

      for (const kind of KINDS) {
        const was = before.get(kind)!;
        const now = await storagesOf(sandbox.url, LISTS[kind]);
        expect(now, kind).toEqual(was);
        const revertMoves = (await movesOf(sandbox.url, kind)).slice(forwardMoves.get(kind));
        const wentBack = [...was]
          .filter(([, s]) => s !== 'cluster')
          .map(([id]) => id)
          .sort((a, b) => a - b);
        // Exactly one move per item, each from the forward run's destination back to its storage, all finished.
        expect(
          revertMoves.map((m) => m.itemId).sort((a, b) => a - b),
          kind,
        ).toEqual(wentBack);
        expect(
          revertMoves.filter(
            (m) => m.state !== 'finished' || m.source !== 'cluster' || m.destination !== was.get(m.itemId),
          ),
          kind,
        ).toEqual([]);
      }
      expect(positive(await weightsOf(sandbox.url))).toEqual(positive(weightsBefore));
    },
  );
});
