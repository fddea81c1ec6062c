/**
 * A bulk POST only enqueues GitLab's `<Kind>::ScheduleBulkRepositoryShardMovesWorker`: the sandbox
 * keeps the job in Sidekiq's queue for `bulkDelayMs` of its own clock (`--bulk-delay`), during which
 * the move records show nothing of it and `GET /sidekiq/queue_metrics` shows it (backlog and the
 * oldest job's age); then it runs and schedules its moves. Checked on a manual clock, from the
 * sandbox's own move records and queue.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { FaultOptions } from '../src/sandbox/faults.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';
import { realTimersAt } from './support/fake-clock.js';

const T0 = Date.parse('2026-06-01T00:00:00Z');

function seed(version: string): Seed {
  const s = structuredClone(loadSeed());
  s.instance.version = version;
  s.inventory = {
    projects: [{ id: 1, storage: 'nfs-1', size_mb: 1 }],
    snippets: [
      { id: 1, storage: 'nfs-1', size_mb: 1 },
      { id: 2, storage: 'nfs-1', size_mb: 1 },
    ],
  };
  return s;
}

async function start(version: string, faults: Partial<FaultOptions>) {
  let now = T0;
  const sb = await startSandbox({ seed: seed(version), moveDurationMs: 1000, clock: realTimersAt(() => now), faults });
  onTestFinished(() => sb.close());
  const advance = async (ms: number) => {
    now += ms;
    sb.state.engine.kick();
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  return { sb, advance };
}

async function snippetMoves(sb: Awaited<ReturnType<typeof start>>['sb']) {
  return (await callSandbox(sb, 'GET', '/snippet_repository_storage_moves')).body as unknown as { id: number }[];
}

async function bulk(sb: Awaited<ReturnType<typeof start>>['sb']) {
  const r = await callSandbox(sb, 'POST', '/snippet_repository_storage_moves', {
    source_storage_name: 'nfs-1',
    destination_storage_name: 'cluster',
  });
  expect(r.status).toBe(202);
}

describe('a bulk job waits in the queue', () => {
  it('creates no move while queued, shows it in the default queue with its age, then runs (16.0+)', async () => {
    const { sb, advance } = await start('17.11.0', { bulkDelayMs: 75_000 });
    await bulk(sb);
    await advance(74_000);
    expect(await snippetMoves(sb)).toEqual([]);
    expect((await callSandbox(sb, 'GET', '/sidekiq/queue_metrics')).body).toEqual({
      queues: { default: { backlog: 1, latency: 74 }, mailers: { backlog: 0, latency: 0 } },
    });
    await advance(1_000);
    expect((await snippetMoves(sb)).length).toBe(2);
    const queues = (await callSandbox(sb, 'GET', '/sidekiq/queue_metrics')).body.queues as Record<
      string,
      { backlog: number }
    >;
    // The job left the queue; its two moves are the default queue's jobs now (until workers take them).
    expect(queues.default?.backlog).toBeLessThanOrEqual(2);
    await advance(5_000);
    expect((await callSandbox(sb, 'GET', '/sidekiq/queue_metrics')).body).toEqual({
      queues: { default: { backlog: 0, latency: 0 }, mailers: { backlog: 0, latency: 0 } },
    });
  });

  it("queues it in the worker's own queue before 16.0", async () => {
    const { sb, advance } = await start('15.11.0', { bulkDelayMs: 10_000 });
    await bulk(sb);
    await advance(3_000);
    const queues = (await callSandbox(sb, 'GET', '/sidekiq/queue_metrics')).body.queues as Record<string, unknown>;
    expect(queues.snippets_schedule_bulk_repository_shard_moves).toEqual({ backlog: 1, latency: 3 });
    expect(queues.projects_schedule_bulk_repository_shard_moves).toBeUndefined();
    expect(await snippetMoves(sb)).toEqual([]);
    await advance(7_000);
    expect((await snippetMoves(sb)).length).toBe(2);
    expect(
      ((await callSandbox(sb, 'GET', '/sidekiq/queue_metrics')).body.queues as Record<string, unknown>)
        .snippets_schedule_bulk_repository_shard_moves,
    ).toEqual({ backlog: 0, latency: 0 });
  });

  it('runs it at once with bulkDelayMs 0, and refuses a negative delay', async () => {
    const { sb, advance } = await start('17.11.0', { bulkDelayMs: 0 });
    await bulk(sb);
    await advance(0);
    expect((await snippetMoves(sb)).length).toBe(2);
    await expect(startSandbox({ seed: seed('17.11.0'), faults: { bulkDelayMs: -1 } })).rejects.toThrow(
      /bulkDelayMs must be from 0/,
    );
  });

  it('waits by default for a few seconds of the sandbox clock', async () => {
    const { sb, advance } = await start('17.11.0', {});
    await bulk(sb);
    await advance(1_000);
    expect(await snippetMoves(sb)).toEqual([]);
    await advance(1_000);
    expect((await snippetMoves(sb)).length).toBe(2);
  });
});
