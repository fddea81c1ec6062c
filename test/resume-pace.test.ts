/**
 * A resumed run's pace is its own, in every live view of it: the `--events` progress lines and the
 * metrics file's ETA give the progress line's rate (this process's moves only, nothing until 5 of
 * them ended), not the last process's moves divided by a few seconds (which read `5400 moves/min,
 * ETA 0s`). The first run is stopped at an exact request (a hold proxy, not a timer), and the resumed
 * one is held at its first request while the two files are read.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { RunEventSchema } from '../src/events/run-events.js';
import type { RunEvent } from '../src/events/run-events.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { runCli, sandboxEnv, writePlan } from './support/cli-harness.js';
import { startProxiedSandbox } from './support/hold-proxy.js';

const MOVE_POST = /^\/api\/v4\/(projects|snippets|groups)\/\d+\/repository_storage_moves$/;

function eventsIn(file: string): RunEvent[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => RunEventSchema.parse(JSON.parse(l)) as RunEvent);
}

/** The value of a gauge in a textfile, or undefined while the file or the series is not there. */
function gauge(file: string, name: string): string | undefined {
  if (!existsSync(file)) return undefined;
  return parsePrometheusTextFormat(readFileSync(file, 'utf8')).find((f) => f.name === name)?.metrics[0]?.value;
}

/** Items the checkpoint records as moved. */
function movedIn(file: string): number {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return store
      .summary(Date.now())
      .counts.filter((c) => c.state === 'moved')
      .reduce((a, c) => a + c.n, 0);
  } finally {
    store.close();
  }
}

/** Resolves once `ready` holds, looking every 20 ms (the files are written by another process). */
async function until(ready: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    if (ready()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never: ${what}`);
}

describe('the pace of a resumed run', () => {
  it(
    'is measured from its own moves in the --events progress lines and the metrics file',
    { timeout: 120_000 },
    async () => {
      const { dir, proxy } = await startProxiedSandbox('resume-pace', ['--move-duration', '40', '--workers', '10'], {
        projects: 30,
        snippets: 0,
        groups: 0,
      });
      const plan = writePlan(dir, { concurrency: 3, from: ['nfs-1', 'nfs-2', 'default'] });
      const env = sandboxEnv(proxy.url);
      const checkpoint = join(dir, 'state', 'it.db');

      // The first run, stopped with Ctrl-C at its 13th move POST (held, never answered): a dozen moved.
      let posts = 0;
      let first: ChildProcess | undefined;
      const firstRun = runCli(['run', plan], { cwd: dir, env, onStart: (c) => (first = c) });
      await proxy.arm({ match: (r) => r.method === 'POST' && MOVE_POST.test(r.url) && ++posts === 13, forward: false });
      first!.kill('SIGINT');
      proxy.release();
      const stopped = await firstRun;
      expect(stopped.code, stopped.stderr).toBe(130);
      const movedBefore = movedIn(checkpoint);
      expect(movedBefore).toBeGreaterThanOrEqual(5);

      // The resumed run, held at its first request while its files are read.
      const events = join(dir, 'events.jsonl');
      const metrics = join(dir, 'textfile', 'it.prom');
      const held = proxy.arm({ match: () => true, forward: false });
      const resumed = runCli(['run', plan, '--events', events, '--events-interval', '1s', '--metrics-file', metrics], {
        cwd: dir,
        env,
      });
      await held;
      await until(() => eventsIn(events).some((e) => e.type === 'progress'), 'a progress line');
      await until(() => gauge(metrics, 'shardmove_eta_seconds') !== undefined, 'the metrics file');
      const start = eventsIn(events).find((e) => e.type === 'progress');
      // Nothing of this process has ended yet: no rate, no ETA (the last process's moves do not count).
      expect(start).toMatchObject({ type: 'progress', movesPerMinute: 0, etaMs: null });
      expect(start?.type === 'progress' && start.done).toBe(movedBefore);
      expect(gauge(metrics, 'shardmove_eta_seconds')?.toLowerCase()).toBe('nan');
      if (start?.type === 'progress')
        expect(Number(gauge(metrics, 'shardmove_items_remaining'))).toBe(start.total - start.done - start.quarantined);
      proxy.release();

      const done = await resumed;
      expect(done.code, done.stderr).toBe(0);
      // Every progress line: a rate only once 5 of this process's moves ended, and never more moves
      // a minute than this process could have moved in the time it ran.
      for (const p of eventsIn(events)) {
        if (p.type !== 'progress') continue;
        const own = p.done - movedBefore;
        if (own < 5) expect(p, JSON.stringify(p)).toMatchObject({ movesPerMinute: 0 });
        expect(p.movesPerMinute * (p.elapsedMs / 60_000), JSON.stringify(p)).toBeLessThanOrEqual(own + 0.5);
      }
    },
  );
});
