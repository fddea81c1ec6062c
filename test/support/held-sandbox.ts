/**
 * An in-process sandbox whose moves are held: each takes a minute of the sandbox's own clock, which
 * only the test moves on (`letGo`). A run (a separate CLI process) schedules into it and its moves
 * stay in flight until the test lets them end, so "what was in flight when X happened" is built,
 * not waited for. `opts.seed` may change the seed file before the sandbox reads it; `opts.faults`
 * injects the sandbox's faults. Closed when the test ends.
 */
import { onTestFinished } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox, SandboxOptions } from '../../src/sandbox/index.js';
import type { CliResult } from './cli-harness.js';
import { ADMIN_TOKEN, movesOf, writeSeed } from './cli-harness.js';
import type { SandboxMove } from './cli-harness.js';
import { realTimersAt } from './fake-clock.js';

/** A move's duration in the sandbox's time: far longer than any test waits in wall time. */
export const HELD_MOVE_MS = 60_000;

export interface HeldSandbox {
  sb: RunningSandbox;
  url: string;
  /** Moves the sandbox's clock past every move in flight, so they end at its next tick. */
  letGo(): void;
  /** Moves the sandbox's clock on by `ms` (moves end HELD_MOVE_MS after they started). */
  advance(ms: number): void;
  /** Lets moves end again and again until `run` exits; returns its result. */
  pumpUntil(run: Promise<CliResult>): Promise<CliResult>;
  /** Every move the sandbox recorded, of every kind, oldest first. */
  moves(): Promise<SandboxMove[]>;
  /** The storage weights the sandbox holds. */
  weights(): Promise<Record<string, number>>;
}

export async function startHeldSandbox(
  dir: string,
  counts: { projects: number; snippets: number; groups: number },
  opts: { seed?: (file: string) => void; faults?: SandboxOptions['faults'] } = {},
): Promise<HeldSandbox> {
  let shift = 0;
  const seed = writeSeed(dir, counts);
  opts.seed?.(seed);
  const sb = await startSandbox({
    seed,
    moveDurationMs: HELD_MOVE_MS,
    workers: 50,
    clock: realTimersAt(() => Date.now() + shift),
    ...(opts.faults ? { faults: opts.faults } : {}),
  });
  onTestFinished(() => sb.close());
  const advance = (ms: number) => {
    shift += ms;
    sb.state.engine.kick();
  };
  const letGo = () => advance(HELD_MOVE_MS + 1_000);
  return {
    sb,
    url: sb.url,
    letGo,
    advance,
    async pumpUntil(run) {
      let ended: CliResult | null = null;
      void run.then((r) => (ended = r));
      while (!ended) {
        letGo();
        await new Promise((r) => setTimeout(r, 50));
      }
      return ended;
    },
    async moves() {
      const all = [...(await movesOf(sb.url, 'project')), ...(await movesOf(sb.url, 'snippet'))];
      return [...all, ...(await movesOf(sb.url, 'group'))];
    },
    async weights() {
      const res = await fetch(`${sb.url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
      return ((await res.json()) as { repository_storages_weighted: Record<string, number> })
        .repository_storages_weighted;
    },
  };
}

/** A move GitLab has ended, one way or another. */
export const ended = (m: Pick<SandboxMove, 'state'>): boolean =>
  ['finished', 'failed', 'cleanup failed'].includes(m.state);
