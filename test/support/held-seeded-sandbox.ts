/**
 * An in-process sandbox with a seed of the test's own (as startSeededSandbox makes one) whose moves
 * are held (as startHeldSandbox holds them): a run with `move.concurrency: 1` posts one move and
 * waits, so the test changes the instance (a project transferred to another namespace) between
 * that run's listing and its next POST by construction. Closed when the test ends.
 */
import { onTestFinished } from 'vitest';
import type { Document } from 'yaml';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import type { CliResult } from './cli-harness.js';
import { writeChangedSeed } from './cli-harness.js';
import { HELD_MOVE_MS } from './held-sandbox.js';
import { realTimersAt } from './fake-clock.js';

export interface HeldSeededSandbox {
  sb: RunningSandbox;
  url: string;
  /** Moves every item of `ids` of the sandbox's projects into `namespace`, as a transfer does. */
  transferProjects(ids: readonly number[], namespace: string): void;
  /** Lets moves end again and again until `run` exits; returns its result. */
  pumpUntil(run: Promise<CliResult>): Promise<CliResult>;
}

export async function startHeldSeededSandbox(
  dir: string,
  change: (seed: Document) => void,
): Promise<HeldSeededSandbox> {
  let shift = 0;
  const sb = await startSandbox({
    seed: writeChangedSeed(dir, { projects: 0, snippets: 0, groups: 0 }, change),
    moveDurationMs: HELD_MOVE_MS,
    workers: 20,
    clock: realTimersAt(() => Date.now() + shift),
  });
  onTestFinished(() => sb.close());
  return {
    sb,
    url: sb.url,
    transferProjects(ids, namespace) {
      const update = sb.state.db.prepare("UPDATE items SET namespace = ? WHERE kind = 'project' AND id = ?");
      for (const id of ids) update.run(namespace, id);
    },
    async pumpUntil(run) {
      let ended: CliResult | null = null;
      void run.then((r) => (ended = r));
      while (!ended) {
        shift += HELD_MOVE_MS + 1_000;
        sb.state.engine.kick();
        await new Promise((r) => setTimeout(r, 50));
      }
      return ended;
    },
  };
}
