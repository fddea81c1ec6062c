/** What one drive of the run machine is given (./drive.ts). */
import type { Logger } from 'pino';
import type { Snapshot } from 'xstate';
import type { ActorDeps } from '../../actors/index.js';
import type { InstanceApi } from '../../api/types.js';
import type { PrometheusClient } from '../../api/prometheus.js';
import type { RunInput } from '../../machine/types.js';
import type { Plan } from '../../plan/types.js';
import type { MigrationSpan } from '../../report/span.js';
import type { SchedulingGate } from '../../schedule/gate.js';
import type { CheckpointStore } from '../../store/types.js';
import type { SecretSet } from '../observe/logger.js';
import type { RunOptions, RuntimeServices } from '../types.js';

/** What one drive needs: the run's options, its open resources and the machine's input or snapshot. */
export interface DriveArgs {
  opts: RunOptions;
  services: RuntimeServices;
  plan: Plan;
  hash: string;
  /** The plan the hash covers, as canonical JSON (plan/hash.ts), kept with every snapshot. */
  planRecord?: string;
  store: CheckpointStore;
  api: InstanceApi;
  log: Logger;
  logFile: string;
  secrets: SecretSet;
  input: RunInput;
  snapshot: Snapshot<unknown> | undefined;
  /** Maintenance windows and throttle, when the plan has them. */
  gate?: SchedulingGate | undefined;
  /** The operator's Prometheus, when the plan names one (pre-flight runs every rule's query once). */
  prometheus?: PrometheusClient | undefined;
  /** Whether this goes on from an earlier process's work in the checkpoint (../resume.ts); absent: when a snapshot is restored. */
  resumed?: boolean;
  /** Instance outages (../holds/outage-hold.ts): given the drain's deps, the hold is recorded as their cap. */
  outage?: { attach(deps: ActorDeps): void } | undefined;
  /** The log's last sequence number before this process took the lock (observers read on from it). */
  fromSeq: number;
  /** The whole migration before this process (../../report/span.ts): the report covers it all. */
  before?: MigrationSpan;
  /** True once the run lock was lost: a stop request and the stop file are then left to its new holder. */
  leaseLost?: () => boolean;
}
