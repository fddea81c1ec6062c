/**
 * The actors' contract: what every effect (actor) receives from the runtime (`ActorDeps`), and the
 * one function per step the machine names (`RunActors`). Actors do one step's work, idempotently:
 * after a crash the runtime restores the machine and re-invokes the step, which must pick up from
 * the checkpoint (SQLite) rather than redo what is done.
 */
import type { RunNamed } from '../shared/control-command.js';
import type { Logger } from 'pino';
import type { PrometheusClient } from '../api/prometheus.js';
import type { InstanceApi } from '../api/types.js';
import type {
  DrainInput,
  DrainOutput,
  GeoOutput,
  PreflightOutput,
  StoragesOutput,
  VerifyInput,
  VerifyOutput,
  WeightsOutput,
} from '../machine/types.js';
import type { Plan } from '../plan/types.js';
import type { SchedulingGate } from '../schedule/gate.js';
import type { ActorStore } from '../store/types.js';
import type { Clock } from '../shared/clock.js';

/**
 * What an actor is given. `S` is the part of the checkpoint the actor may touch: the runtime passes
 * the whole ActorStore, and each actor declares its view of it (../store/views.ts), so its type says
 * which statements it runs.
 */
export interface ActorDeps<S = ActorStore> {
  api: InstanceApi;
  store: S;
  plan: Plan;
  clock: Clock;
  log: Logger;
  /** Aborted on SIGINT/SIGTERM: stop scheduling, let the checkpoint be written, return/throw promptly. */
  signal: AbortSignal;
  /** Rehearsal: read everything, change nothing (the client also refuses mutating requests). */
  dryRun: boolean;
  /**
   * The moves in flight a dry run's estimate assumes (its `drain.dry_run` events): under
   * `move.concurrency: auto` the knee of the real run's checkpoint or the limiter's `min`
   * (../runtime/auto-estimate.ts). Absent: the plan's fixed cap.
   */
  dryRunCap?: number;
  /** Called when item-level progress changed, for the live progress line (cheap; may be throttled). */
  onProgress?: () => void;
  /** Maintenance windows and the load-aware throttle (absent: the operator's cap alone). */
  gate?: SchedulingGate;
  /** The operator's Prometheus, when the plan names one: pre-flight runs every rule's query once. */
  prometheus?: PrometheusClient;
  /**
   * The instance's GitLab version as pre-flight read it (null before pre-flight, or unreadable): what
   * lands with a fork's move depends on the release (./networks.ts).
   */
  instanceVersion?: () => string | null;
  /**
   * The items are given in the checkpoint (`shardmove revert`, or `list`: a reviewed item list,
   * `run --only`): the drain moves those rows only and never lists a source, which holds other items
   * that must stay where they are.
   */
  itemsGiven?: boolean | 'list';
  /**
   * Whether a stop was asked for (`shardmove control --stop`, the stop file), looked at now: the
   * row and the stop file both, without waiting for the watcher's next look. Absent (tests, a
   * command without a watcher): the checkpoint's control row alone is read.
   */
  stopAsked?: () => boolean;
  /** `run --accept-foreign-moves`: pre-flight warns of moves in flight it did not schedule, instead of refusing. */
  acceptForeignMoves?: boolean;
  /** A dry run: what the runtime found a real run would be refused for before pre-flight (a live drain on this host). */
  refusedBeforePreflight?: readonly string[];
  /**
   * How this run's plan and checkpoint were named on its command line, for the commands the run
   * writes into its records (the failure breaker's reason, ../shared/control-command.ts); absent:
   * the words with a PLAN placeholder.
   */
  named?: RunNamed;
}

/**
 * One function per actor the machine names, each taking the run's dependencies and the invoke
 * input. The runtime provides the real ones (`realActors`, ./index.ts) or a revert's, tests their own.
 */
export interface RunActors {
  preflight(deps: ActorDeps): Promise<PreflightOutput>;
  storages(deps: ActorDeps): Promise<StoragesOutput>;
  readWeights(deps: ActorDeps): Promise<Record<string, number>>;
  weights(deps: ActorDeps, input: { previous: Record<string, number> }): Promise<WeightsOutput>;
  drain(deps: ActorDeps, input: DrainInput): Promise<DrainOutput>;
  verify(deps: ActorDeps, input: VerifyInput): Promise<VerifyOutput>;
  geo(deps: ActorDeps): Promise<GeoOutput>;
}
