/**
 * The Sidekiq side of the moves: each move is a job of GitLab's `<Kind>::UpdateRepositoryStorageWorker`,
 * queued when the move is scheduled and run by one of `--workers` Sidekiq threads.
 *
 * - The queue: from 16.0 GitLab routes every job to the `default` queue (the routing rule
 *   `[['*', 'default']]`; mailers go to `mailers`); before, each worker has its own queue named after
 *   it (`projects_update_repository_storage`). A job waits in it from the move's creation until a
 *   worker takes it; a move whose job was lost (stuck in `scheduled`) is in no queue.
 * - Sidekiq's exporter (`sidekiq_exporter`, 8082 on Omnibus; `lib/gitlab/sidekiq_middleware/
 *   server_metrics.rb`, `metrics_helper.rb`): `sidekiq_running_jobs` by queue and worker with the
 *   worker's attributes (`feature_category` gitaly, `urgency` throttled), and `sidekiq_concurrency`;
 *   both `:all` gauges, so they carry the process's `pid` (`sidekiq_0`).
 * - gitlab-exporter's Sidekiq probe (9168, path `/sidekiq`): `sidekiq_queue_size`,
 *   `sidekiq_queue_latency_seconds` and `sidekiq_queue_paused` by queue `name`, and
 *   `sidekiq_jobs_enqueued_size` (`lib/gitlab_exporter/sidekiq.rb`; the HELP texts are the sandbox's).
 * - `GET /api/v4/sidekiq/queue_metrics` (`lib/api/sidekiq_metrics.rb`): `{queues: {name: {backlog,
 *   latency}}}`, latency in whole seconds (`queue.latency.to_i`), queues in name order.
 * - Bulk jobs: a bulk POST enqueues one `<Kind>::ScheduleBulkRepositoryShardMovesWorker` job
 *   (`ScheduleBulkRepositoryShardMovesMethods.enqueue`, `perform_async`). It waits in the same
 *   queue as the moves from 16.0 (`default`), before in its own (`snippets_schedule_bulk_repository_shard_moves`,
 *   listed once a job was pushed to it, as Sidekiq's `queues` set keeps it), until the engine runs
 *   it (../moves/engine.ts). Sidekiq's `Queue#latency` is the age of the oldest job in the queue
 *   (`lindex -1`, its `enqueued_at`), bulk jobs and moves alike.
 */
import type { Db, ItemKind } from '../db.js';
import type { EngineLoad } from '../http/context.js';
import type { Edition } from '../seed-schema.js';
import { atLeast, parseRelease } from '../auth/token-types.js';
import type { Family } from './exposition.js';
import { renderFamilies } from './exposition.js';

const WORKERS: Record<ItemKind, string> = {
  project: 'Projects::UpdateRepositoryStorageWorker',
  snippet: 'Snippets::UpdateRepositoryStorageWorker',
  group: 'Groups::UpdateRepositoryStorageWorker',
};
/** The release whose default routing rule sends every job to `default`. */
const DEFAULT_ROUTING_SINCE = [16, 0] as const;
const PID = 'sidekiq_0';

/** One Sidekiq queue now. */
export interface QueueState {
  name: string;
  /** Jobs waiting. */
  size: number;
  /** Seconds since the oldest waiting job was enqueued (0 when none). */
  latency: number;
}

/** The kinds of move jobs an edition runs (group wikis are EE only). */
function kindsOf(edition: Edition): ItemKind[] {
  return edition === 'ce' ? ['project', 'snippet'] : ['project', 'snippet', 'group'];
}

/** The queue a kind's move jobs go to on `version`. */
export function moveQueueOf(kind: ItemKind, version: string): string {
  if (atLeast(parseRelease(version), DEFAULT_ROUTING_SINCE)) return 'default';
  return `${kind}s_update_repository_storage`;
}

/** The queue a kind's bulk-scheduling jobs go to on `version` (the worker's own queue before 16.0). */
export function bulkQueueOf(kind: ItemKind, version: string): string {
  if (atLeast(parseRelease(version), DEFAULT_ROUTING_SINCE)) return 'default';
  return `${kind}s_schedule_bulk_repository_shard_moves`;
}

/** Every queue with its backlog and latency at `now` (ms), in name order. */
export function readQueues(db: Db, config: { version: string; edition: Edition }, now: number): QueueState[] {
  const rows = db
    .prepare(
      `SELECT kind, count(*) AS n, min(created_at) AS oldest FROM moves
       WHERE state = 'scheduled' AND fate != 'stuck_queued' GROUP BY kind`,
    )
    .all() as { kind: ItemKind; n: number; oldest: string }[];
  // Bulk jobs not started (nothing walked yet) are still queued; every kind ever pushed is listed.
  const bulk = db
    .prepare(
      `SELECT kind, sum(done = 0 AND cursor_id = 0) AS n,
              min(CASE WHEN done = 0 AND cursor_id = 0 THEN created_at END) AS oldest
       FROM bulk_jobs GROUP BY kind`,
    )
    .all() as { kind: ItemKind; n: number; oldest: string | null }[];
  const queues = new Map<string, { size: number; oldest: number | null }>();
  const add = (name: string) => queues.get(name) ?? queues.set(name, { size: 0, oldest: null }).get(name)!;
  for (const kind of kindsOf(config.edition)) add(moveQueueOf(kind, config.version));
  if (atLeast(parseRelease(config.version), DEFAULT_ROUTING_SINCE)) add('mailers');
  const waiting = (name: string, n: number, oldest: string | null) => {
    const q = add(name);
    q.size += n;
    const at = oldest === null ? NaN : Date.parse(oldest);
    if (Number.isFinite(at) && (q.oldest === null || at < q.oldest)) q.oldest = at;
  };
  for (const r of rows) waiting(moveQueueOf(r.kind, config.version), r.n, r.oldest);
  for (const r of bulk) waiting(bulkQueueOf(r.kind, config.version), r.n, r.oldest);
  return [...queues.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, q]) => ({
      name,
      size: q.size,
      latency: q.oldest === null ? 0 : Math.max(0, (now - q.oldest) / 1000),
    }));
}

/** Sidekiq's own exporter: jobs running by worker, and the concurrency. */
export function renderSidekiq(load: EngineLoad, config: { version: string; edition: Edition }): string {
  const families: Family[] = [
    {
      name: 'sidekiq_concurrency',
      type: 'gauge',
      help: 'Maximum number of Sidekiq jobs',
      series: [{ labels: { pid: PID }, value: load.workers }],
    },
    {
      name: 'sidekiq_running_jobs',
      type: 'gauge',
      help: 'Number of Sidekiq jobs running',
      series: kindsOf(config.edition).map((kind) => ({
        labels: {
          boundary: '',
          external_dependencies: 'no',
          feature_category: 'gitaly',
          pid: PID,
          queue: moveQueueOf(kind, config.version),
          urgency: 'throttled',
          worker: WORKERS[kind],
        },
        value: load.running.get(kind) ?? 0,
      })),
    },
  ];
  return renderFamilies(families);
}

/** gitlab-exporter's Sidekiq probe: every queue's size and latency. */
export function renderGitlabExporterSidekiq(queues: readonly QueueState[]): string {
  const byName = (value: (q: QueueState) => number) =>
    queues.map((q) => ({ labels: { name: q.name }, value: value(q) }));
  return renderFamilies([
    { name: 'sidekiq_queue_size', type: 'gauge', help: 'Sidekiq queue size', series: byName((q) => q.size) },
    {
      name: 'sidekiq_queue_latency_seconds',
      type: 'gauge',
      help: 'Sidekiq queue latency in seconds',
      series: byName((q) => q.latency),
    },
    { name: 'sidekiq_queue_paused', type: 'gauge', help: 'Sidekiq queue paused', series: byName(() => 0) },
    {
      name: 'sidekiq_jobs_enqueued_size',
      type: 'gauge',
      help: 'Sidekiq enqueued jobs size',
      series: [{ labels: {}, value: queues.reduce((n, q) => n + q.size, 0) }],
    },
  ]);
}

/** `GET /api/v4/sidekiq/queue_metrics`'s body. */
export function queueMetricsBody(queues: readonly QueueState[]): {
  queues: Record<string, { backlog: number; latency: number }>;
} {
  return {
    queues: Object.fromEntries(queues.map((q) => [q.name, { backlog: q.size, latency: Math.trunc(q.latency) }])),
  };
}
