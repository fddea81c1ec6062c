/**
 * What Gitaly's Prometheus listener (`prometheus_listen_addr`, 9236 on Omnibus) says about the moves'
 * load, under Gitaly's own names and labels. The sandbox plays one Gitaly node serving every storage.
 * Gitaly exports no free disk space: that is node_exporter's (./node-exporter.ts).
 *
 * - `gitaly_concurrency_limiting_in_progress` / `_queued` for ReplicateRepository
 *   (`internal/grpc/middleware/limithandler/middleware.go`: Gitaly limits that RPC to one call per
 *   repository by default; `monitor.go` labels `system`, `grpc_service`, `grpc_method`): the copies
 *   running on the node, and calls waiting for another copy of the same repository.
 * - `gitaly_commands_running` (`internal/command/metrics.go`): the processes the copies run (tar
 *   extracting the snapshot, then git fetch), one per copy in progress.
 * - `gitaly_pack_objects_in_progress` / `_queued` (pack-objects limiting, keyed by the remote IP of
 *   clones and fetches): 0, the sandbox has no clone traffic.
 * - `grpc_server_started_total` / `grpc_server_handled_total` (go-grpc-prometheus: `grpc_type`,
 *   `grpc_service`, `grpc_method`, and `grpc_code` when handled) for ReplicateRepository, every code
 *   initialised at 0 as `InitializeMetrics` does.
 * - `process_cpu_seconds_total`: the CPU time of the sandbox's process, the process that plays Gitaly.
 */
import type { EngineLoad } from '../http/context.js';
import type { Family } from './exposition.js';
import { renderFamilies } from './exposition.js';
import { GRPC_CODES } from '../moves/load.js';

const REPLICATE = { grpc_service: 'gitaly.RepositoryService', grpc_method: 'ReplicateRepository' };

/** The exposition text of the Gitaly node. */
export function renderGitaly(load: EngineLoad, cpuSeconds: number): string {
  const r = load.replication;
  const limited = { ...REPLICATE, system: 'gitaly' };
  const rpc = { ...REPLICATE, grpc_type: 'unary' };
  const families: Family[] = [
    {
      name: 'gitaly_commands_running',
      type: 'gauge',
      help: 'Total number of processes currently being executed',
      series: [{ labels: {}, value: r.inProgress }],
    },
    {
      name: 'gitaly_concurrency_limiting_in_progress',
      type: 'gauge',
      help: 'Gauge of number of concurrent in-progress calls',
      series: [{ labels: limited, value: r.inProgress }],
    },
    {
      name: 'gitaly_concurrency_limiting_queued',
      type: 'gauge',
      help: 'Gauge of number of queued calls',
      series: [{ labels: limited, value: r.queued }],
    },
    {
      name: 'gitaly_pack_objects_in_progress',
      type: 'gauge',
      help: 'Gauge of number of concurrent in-progress calls',
      series: [{ labels: {}, value: 0 }],
    },
    {
      name: 'gitaly_pack_objects_queued',
      type: 'gauge',
      help: 'Gauge of number of queued calls',
      series: [{ labels: {}, value: 0 }],
    },
    {
      name: 'grpc_server_started_total',
      type: 'counter',
      help: 'Total number of RPCs started on the server.',
      series: [{ labels: rpc, value: r.started }],
    },
    {
      name: 'grpc_server_handled_total',
      type: 'counter',
      help: 'Total number of RPCs completed on the server, regardless of success or failure.',
      series: GRPC_CODES.map((code) => ({ labels: { ...rpc, grpc_code: code }, value: r.handled.get(code) ?? 0 })),
    },
    {
      name: 'process_cpu_seconds_total',
      type: 'counter',
      help: 'Total user and system CPU time spent in seconds.',
      series: [{ labels: {}, value: cpuSeconds }],
    },
  ];
  return renderFamilies(families);
}
