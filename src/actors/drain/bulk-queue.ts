/**
 * Whether a bulk move's job may still wait in Sidekiq's queue. GitLab's bulk route only enqueues
 * `<Kind>::ScheduleBulkRepositoryShardMovesWorker` (`perform_async`) and answers 202: nothing in
 * the move API says the job has run, and a job still queued shows exactly what a job that ran and
 * found nothing shows. `GET /sidekiq/queue_metrics` (administrators) gives each queue's backlog and
 * latency, the age of its oldest waiting job in whole seconds (Sidekiq's `Queue#latency`, truncated
 * by `to_i`). A queue is worked oldest first, so once its oldest job is younger than our POST, or it
 * is empty, our job has left it (it ran, or runs now).
 *
 * The job's queue: `default` from 16.0 (the default routing rule sends every job there), the
 * worker's own before (`snippets_schedule_bulk_repository_shard_moves`). An instance with routing
 * rules of its own may send it elsewhere: when the expected queue is not listed, every queue is
 * judged, so that a wait elsewhere is never taken for a job that ran.
 *
 * What this cannot see: a job that raised and waits in Sidekiq's retry set (`retry: 3`), or one
 * deferred by a concurrency limit outside the queue; neither is in `queue_metrics`.
 */
import type { QueueMetrics } from '../../api/types.js';
import type { Kind } from '../../plan/types.js';

/**
 * Seconds of allowance for clocks: the latency is measured by the Rails node that answers, the
 * job's `enqueued_at` by the one that enqueued it; and `to_i` drops up to a second.
 */
const CLOCK_SLACK_S = 2;

/** What the queue says of a bulk job. */
export type BulkQueueState =
  /** It may still wait: a queue that can hold it has a job at least as old as our POST. */
  | { state: 'queued'; queue: string; backlog: number; latencyS: number }
  /** It left the queue: every queue that can hold it is empty or younger than our POST. */
  | { state: 'left'; queues: string[] }
  /** The queue could not be read: nothing is proven either way. */
  | { state: 'unknown'; reason: string };

const DEFAULT_ROUTING_SINCE: readonly [number, number] = [16, 0];

/** The queue the release puts a kind's bulk-scheduling job on (null: the release is unknown). */
export function bulkJobQueue(kind: Kind, version: string | null): string | null {
  const m = version === null ? null : /^(\d+)\.(\d+)/.exec(version);
  if (!m) return null;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  const routed =
    major > DEFAULT_ROUTING_SINCE[0] || (major === DEFAULT_ROUTING_SINCE[0] && minor >= DEFAULT_ROUTING_SINCE[1]);
  return routed ? 'default' : `${kind}_schedule_bulk_repository_shard_moves`;
}

/**
 * Judges the queue for a job enqueued at the latest at `postedAt` (the POST's answer, or a resumed
 * run's start), from metrics whose request was sent at `readAt` (both on this process's clock; only
 * their difference counts, so the clocks' offset cancels out).
 */
export function judgeBulkQueue(
  metrics: QueueMetrics,
  expected: string | null,
  postedAt: number,
  readAt: number,
): BulkQueueState {
  const names = expected !== null && expected in metrics.queues ? [expected] : Object.keys(metrics.queues).sort();
  const sincePostS = Math.max(0, readAt - postedAt) / 1000;
  let worst: Extract<BulkQueueState, { state: 'queued' }> | null = null;
  for (const name of names) {
    const q = metrics.queues[name];
    if (!q || q.backlog <= 0) continue;
    // Our job still there means the oldest job is at least as old as it: latency >= sincePost - 1.
    if (q.latency + 1 + CLOCK_SLACK_S > sincePostS && (!worst || q.latency > worst.latencyS))
      worst = { state: 'queued', queue: name, backlog: q.backlog, latencyS: q.latency };
  }
  return worst ?? { state: 'left', queues: names };
}

/** The Rails console check of what is left of a kind on a storage (0 when nothing is). */
export function railsCountQuery(kind: Kind, storage: string): string {
  const model =
    kind === 'snippets' ? 'SnippetRepository' : kind === 'groups' ? 'GroupWikiRepository' : 'ProjectRepository';
  return `${model}.for_repository_storage('${storage.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}').count`;
}
