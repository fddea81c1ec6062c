/**
 * `GET /-/sandbox/metrics` (issue 22): room and load of each storage in Prometheus' text format
 * (version 0.0.4), what node_exporter on an Omnibus Gitaly node would tell about the filesystem a
 * storage lives on, plus a busy gauge. Sandbox-only: GitLab's REST API reports no storage's free
 * space (docs/gitlab-behaviour.md §3.4).
 *
 * - `node_filesystem_size_bytes{storage, mountpoint}`: the seeded `instance.storage_capacity`.
 * - `node_filesystem_avail_bytes{storage, mountpoint}`: that minus what the storage's repositories,
 *   the copies moves left on it and the moves in flight take (moves/room.ts), never below 0.
 *   Storages without a capacity are left out of both, as a filesystem nobody measures.
 * - `sandbox_storage_busy_ratio{storage, mountpoint}`: moves running on the storage, as source or
 *   destination, over the number that saturates it (moves/policy.ts, SATURATING_MOVES), capped at
 *   1; every configured storage. A stand-in for disk utilisation (what
 *   `rate(node_disk_io_time_seconds_total[1m])` shows on a real node): 0 when nothing moves.
 *
 * The mountpoint is `/var/opt/gitlab/git-data/<storage>`, each storage its own filesystem under
 * Omnibus' git-data directory; `storage` is the label a relabelling rule would add. Access is
 * GitLab's own `/-/metrics` rule: clients on the monitoring IP allowlist, no credentials; everyone
 * else gets the HTML not-found page, as the health probes do. Exempt from request faults (`/-/`).
 */
import type { RequestContext, Reply, StorageGauge } from '../http/context.js';
import type { Router } from '../http/router.js';
import { NOT_FOUND_PAGE, isMonitoringClient } from './health.js';

/** Prometheus' text exposition format, version 0.0.4. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Where a storage's filesystem is mounted in the sandbox's story. */
export function mountpointOf(storage: string): string {
  return `/var/opt/gitlab/git-data/${storage}`;
}

/** Adds `GET /-/sandbox/metrics`. */
export function register(router: Router): void {
  router.get('/-/sandbox/metrics', { level: 'none' }, (ctx) =>
    isMonitoringClient(ctx) ? metrics(ctx) : NOT_FOUND_PAGE,
  );
}

function metrics(ctx: RequestContext): Reply {
  return {
    text: renderStorageMetrics(ctx.state.engine.storageGauges()),
    headers: { 'content-type': EXPOSITION_CONTENT_TYPE },
  };
}

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
function labelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** The exposition text of `gauges`. */
export function renderStorageMetrics(gauges: readonly StorageGauge[]): string {
  const lines: string[] = [];
  const family = (name: string, help: string, rows: [StorageGauge, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [g, value] of rows)
      lines.push(
        `${name}{storage="${labelValue(g.storage)}",mountpoint="${labelValue(mountpointOf(g.storage))}"} ${value}`,
      );
  };
  const sized = gauges.filter((g) => g.capacityBytes !== null);
  family(
    'node_filesystem_size_bytes',
    "Filesystem size in bytes (the storage's seeded capacity).",
    sized.map((g) => [g, g.capacityBytes as number]),
  );
  family(
    'node_filesystem_avail_bytes',
    'Filesystem space available to non-root users in bytes.',
    sized.map((g) => [g, Math.max(0, (g.capacityBytes as number) - (g.usedBytes ?? 0))]),
  );
  family(
    'sandbox_storage_busy_ratio',
    'Moves running on the storage (source or destination) over the number that saturates its disk, at most 1.',
    gauges.map((g) => [g, g.busyRatio]),
  );
  return `${lines.join('\n')}\n`;
}
