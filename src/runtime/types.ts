/** The runtime's contracts: what a run needs from the outside world (real by default, fakes in tests), its options and its outcome. */
import type { RequestEvent } from '../api/client.js';
import type { InstanceApi } from '../api/types.js';
import type { OutageGate } from '../api/outage.js';
import type { LoadedPlan } from '../plan/load.js';
import type { PrometheusClient, PrometheusOptions } from '../api/prometheus.js';
import type { Plan } from '../plan/types.js';
import type { FinalReportInput, StoppedReportInput } from '../report/final.js';
import type { CheckpointStore, RunMode } from '../store/types.js';
import type { Clock } from '../shared/clock.js';
import type { RunActors } from '../actors/index.js';
import type { RunObserver } from './observe/observer.js';
import type { Precheck } from './precheck/precheck.js';

/** A fresh OAuth pair after a refresh (secrets: memory and token files only). */
export interface RefreshedTokens {
  accessToken: string;
  refreshToken: string;
}

/** Everything a run reaches outside itself; `executeRun` fills in the real ones for what is not given. */
export interface RuntimeServices {
  loadPlan(file: string, opts: { env: Readonly<Record<string, string | undefined>>; cwd: string }): Promise<LoadedPlan>;
  /** `checked`: the file was just checked whole (./precheck/precheck.ts); opening it skips quick_check. */
  openCheckpoint(file: string, opts?: { readOnly?: boolean; checked?: boolean }): CheckpointStore;
  createApi(
    plan: Plan,
    opts: {
      readOnly: boolean;
      onRefresh: (tokens: RefreshedTokens) => void;
      onResponse: (e: RequestEvent) => void;
      /** Instance outages hold the run instead of failing it (api/outage.ts). */
      outage?: OutageGate;
      /** The run's clock: the client's backoff, rate waits and token lifetimes follow it. */
      clock?: Clock;
    },
  ): InstanceApi;
  /** The Prometheus client for `prometheus:` (default: undici against its HTTP API); tests may fake it. */
  createPrometheus?: (opts: PrometheusOptions) => PrometheusClient;
  /** The machine's actors, all seven provided the same way. */
  actors: RunActors;
  clock: Clock;
  /** Whether a process id is alive on this host (stale lock detection). */
  isAlive(pid: number): boolean;
  pid: number;
  host: string;
  /**
   * Records this run as the drain of its sources on this host (./ownership/drain-registry.ts); absent (tests
   * with their own services): no registry.
   */
  claimDrain?: (req: DrainClaimRequest) => Claim;
}

import type { FinalState } from '../events/vocabulary.js';
import type { Claim } from './ownership/claim-record.js';
import type { DrainClaimRequest } from './ownership/drain-registry.js';

export type { FinalState } from '../events/vocabulary.js';

/**
 * How a run that got as far as the machine ended: interrupted or stopped on request with the
 * checkpoint saved, or in a final state with the report's data. The CLI turns it into an exit code and prints the report.
 */
export type RunOutcome =
  | {
      kind: 'interrupted';
      /**
       * Moves posted and not seen to end (in flight, or posted with the answer not yet recorded):
       * they go on on GitLab, their repositories read-only until each ends. Absent: not counted.
       */
      inFlight?: number;
    }
  | {
      /** Stopped on request (`control --stop`, the stop file) once nothing was in flight; `run` again resumes. */
      kind: 'stopped';
      report: StoppedReportInput;
      redact(text: string): string;
    }
  | {
      kind: 'final';
      state: FinalState;
      report: FinalReportInput;
      /** Masks the run's secrets (refreshed OAuth tokens included) in text about to be printed. */
      redact(text: string): string;
    };

/** How a run ended, as its caller hears it before the checkpoint is let go: its outcome, or what it threw. */
export type RunEnd = { outcome: RunOutcome } | { error: unknown };

/** Options of one `run` (the CLI's arguments and context). */
export interface RunOptions {
  planFile: string;
  statePath?: string | undefined;
  dryRun: boolean;
  /** The kind of checkpoint this run claims (default: `dry-run` or `run` by `dryRun`); `revert` for shardmove revert. */
  mode?: RunMode;
  acceptPlanChange: boolean;
  /** Give quarantined items (not those stuck on a running move) another retry.max_attempts tries. */
  retryQuarantined?: boolean;
  /** Schedule outside the plan's maintenance windows (emergencies; logged in the audit events). */
  ignoreSchedule?: boolean;
  /** `--accept-foreign-moves`: start beside moves in flight on the sources that this checkpoint did not schedule. */
  acceptForeignMoves?: boolean;
  /** A dry run: what the runtime found a real run would be refused for before pre-flight (set by ./run.ts). */
  refusedBeforePreflight?: readonly string[];
  /** The run lock's lease period (ms); DEFAULT_LEASE_MS in ./lease.ts when absent. */
  leaseMs?: number | undefined;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  signal: AbortSignal;
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Watchers of the run (e.g. the metrics file); see ./observer.ts. */
  observers?: readonly RunObserver[];
  /** The checkpoint's whole-file check, started before the run's modules loaded (./precheck/precheck.ts). */
  precheck?: Promise<Precheck | null>;
  /**
   * `run --only FILE`: the reviewed list this run applies (its digest over the items, and the file as
   * named). The checkpoint must be fresh or seeded from this same list; a run without it refuses a
   * checkpoint seeded from a list (./only.ts).
   */
  given?: { digest: string; file: string };
  /**
   * Start the machine from pre-flight with this reason, even over a finished run: a revert that takes
   * new items (another `--only` list, or the rest after one) must drain them, not replay its end.
   */
  startOver?: string;
  /**
   * Told how the run ended once it got as far as the lock, while the checkpoint is still held and
   * before the observers stop (the notifications record the run's last event with it).
   */
  onEnd?: (end: RunEnd) => void;
}
