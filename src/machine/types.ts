/**
 * The run machine's vocabulary: its input, context, and what each named actor returns. Everything
 * here is plain data (JSON-safe), because the context is persisted in the checkpoint: never put a
 * secret, a function or a class instance in it.
 */
import type { KindAccessMode } from '../api/types.js';
import type { Kind } from '../plan/types.js';

export type { KindAccessMode };

/** The steps of the sequence, in order (spec: "What the service does", item 7). */
export type StepName = 'preflight' | 'storages' | 'weights' | 'drain' | 'verify' | 'geo' | 'done';

/** The machine's input: the shape of the run, derived from the plan, with no secrets. */
export interface RunInput {
  /** Source storages, drained in this order. */
  sources: string[];
  /**
   * How the drain step goes (`move.order`): `together`, one invocation over every (source, kind)
   * in one schedule; `by-kind`, one invocation per (source, kind) in order. Absent (snapshots from
   * before the one schedule, bulk mode, a revert): by kind.
   */
  order?: 'together' | 'by-kind';
  /** The first destination (the only one before `move.to` took a list; kept so older snapshots read the same). */
  destination: string;
  /** Every destination, in the plan's order; absent in snapshots older than several destinations. */
  destinations?: string[];
  kinds: Kind[];
  verify: boolean;
  geoResync: boolean;
  dryRun: boolean;
  /** Warnings the runtime found before the machine started (e.g. OAuth tokens kept only in memory). */
  warnings?: string[];
  /** Weights seen before the first write, carried over when a changed plan restarts the machine. */
  previousWeights?: Record<string, number> | null;
  /** When the run first started (ms since epoch), given by the runtime: the machine reads no clock. */
  startedAt?: number | null;
}

export interface PreflightOutput {
  version: string;
  /** `GET /metadata`'s `enterprise`: true EE, false CE, null when the instance does not say. */
  enterprise?: boolean | null;
  username: string;
  warnings: string[];
  /** What pre-flight found that is information, not a problem (room that fits). Absent: none. */
  notes?: string[];
  /** The run's token's expiry date (YYYY-MM-DD) when known, to compare with the estimated end. */
  tokenExpiresAt?: string | null;
  /**
   * How each kind's items can be found on a storage (absent kinds: `listing`). `unsupported` kinds
   * are dropped from the run with a warning; `records` kinds are moved in bulk and verified by
   * their move records.
   */
  access?: Partial<Record<Kind, KindAccessMode>>;
  /** A dry run: what a real run would be refused for (room that does not fit, moves of others in flight). */
  wouldRefuse?: string[];
}

export interface StoragesOutput {
  warnings: string[];
}

export interface WeightsOutput {
  /** The weights as read back after the write (dry run: what would be written). */
  current: Record<string, number>;
  /** False when nothing was written (dry run, or the instance already had these weights). */
  written: boolean;
  warnings: string[];
}

export interface DrainInput {
  source: string;
  kind: Kind;
  /** How the kind's items are found (pre-flight's probe); `listing` when absent. */
  access?: KindAccessMode;
  /** The next drain of the sequence, whose items may fill this one's tail (absent for the last). */
  ahead?: { source: string; kind: Kind; access: KindAccessMode } | null;
  /**
   * The one schedule (`move.order: together`): every (source, kind) this invocation drains, in the
   * run's order; `source` and `kind` are then the first of them. Absent: this one pair only.
   */
  pairs?: DrainPair[] | null;
}

/** One (source, kind) of the one schedule. */
export interface DrainPair {
  source: string;
  kind: Kind;
  access: KindAccessMode;
}

export interface VerifyInput {
  /** The kinds the run drains (pre-flight drops those the instance cannot move). */
  kinds: Kind[];
  access: Partial<Record<Kind, KindAccessMode>>;
}

/** See `DrainOutput.unreachable`. */
export interface UnreachableOutput {
  items: number;
  by: 'bulk' | 'quarantine';
  /** What forbids the bulk move (`move.select`, ...), when `by` is quarantine. */
  forbiddenBy?: string;
  left: number;
  release: string | null;
}

export interface DrainOutput {
  /** Items moved (including those that left the source by other means). */
  moved: number;
  quarantined: number;
  /** Items still on the source and not quarantined (dry run: what would be moved). */
  remaining: number;
  /** The kind's storage is not exposed: moved in bulk and followed through its move records (dry run: count unknown). */
  byRecords?: boolean;
  /** A partial drain (`move.until`) reached its bound: items never placed, left on the source as the plan asked. */
  kept?: number;
  /**
   * Projects the per-item move routes cannot reach (hidden or pending deletion, before 16.7): how
   * many, which way they go (the bulk move of the source, or quarantined: the plan forbids it),
   * and how many of them are still quarantined on the source (dry run: how many would be).
   */
  unreachable?: UnreachableOutput;
  /**
   * The one schedule's result per (source, kind), recorded in the context as a drain per pair
   * would have been (the counts above are then their sums). Absent: the drain of one pair.
   */
  perPair?: PairOutput[];
}

/** What the one schedule says of one (source, kind). */
export type PairOutput = Omit<DrainOutput, 'perPair'> & { source: string; kind: Kind };

/** What content verification found (actors/verify-content.ts): in the verification's output, status and the report. */
export interface ContentVerifyOutput {
  /** The share of the moved projects sampled (1: all). */
  fraction: number;
  /** Sampled projects that moved, compared or not. */
  sampled: number;
  /** Of those, compared and equal. */
  equal: number;
  /** Compared and different, and not compared: counts, then the first projects of each, named. */
  differ: number;
  notCompared: number;
  /** What differs, in words (`HEAD of main 1a2b.. -> 3c4d..`). */
  differing: { id: number; name: string; differences: string[] }[];
  /** Why it was not compared. */
  unchecked: { id: number; name: string; why: string }[];
}

export interface VerifyOutput {
  ok: boolean;
  perKindAndSource: unknown;
  problems: string[];
  /** The content check of sampled projects (plan `verify.content`); absent when the plan asks for none. */
  content?: ContentVerifyOutput;
  /** What the storage-filtered listing found still on the sources at the end; absent in older checkpoints. */
  stays?: StaysOutput;
}

/**
 * Why an item stays on its source at the end of a run: quarantined, not in the reviewed list
 * (`run --only`), not chosen by `move.select`, or left by a reached `move.until` bound.
 */
export type StayReason = 'quarantined' | 'not in the list' | 'not selected' | 'move.until';

/** One item the listing found on a source at the end, with why it stays. */
export interface StayingItem {
  kind: Kind;
  id: number;
  path: string;
  source: string;
  why: StayReason;
}

/**
 * What is on the sources at the end of a run, from the instance's own storage-filtered listing.
 * `listed`: every (kind, source) of the run was listed in full (false: some could not be, and
 * "nothing is left" cannot be said); `total` counts every item found, `items` the first
 * STAYS_LISTED of them by source, kind and id; `bySource` the counts per source and reason.
 */
export interface StaysOutput {
  listed: boolean;
  total: number;
  bySource: { source: string; why: StayReason; n: number }[];
  items: StayingItem[];
  /** The (kind, source) pairs that could not be listed, with why. */
  unlisted?: string[];
}

/** Staying items recorded by name in the verification's output; beyond it, counted. */
export const STAYS_LISTED = 1000;

/** The resync asked of one Geo secondary. */
export interface GeoSiteResult {
  siteId: number;
  name: string;
  /** Per registry class, GraphQL's errors (empty: the resync was accepted); `forwarded` absent in older checkpoints. */
  results: { registryClass: string; errors: string[]; forwarded?: boolean }[];
  /** Why the site could not be asked at all (node proxy 404, HTTP error), else null. */
  error: string | null;
}

/**
 * The Geo step's outcome, per secondary site. `warnings` say why nothing (or not everything) was
 * resynced: no Geo, no secondary, a disabled site. Checkpoints written before per-site resync hold
 * `{ results }` (one call to the primary) instead; readers must not assume `sites`.
 */
export interface GeoOutput {
  sites: GeoSiteResult[];
  warnings: string[];
}

/**
 * Why the run failed: the step and the cause, as a stable code and a message. Data, not an Error:
 * it is stored in the checkpoint (what an actor threw becomes one through toStepFailure).
 */
export interface StepFailure {
  step: StepName;
  code: string;
  message: string;
}

/** The run's shape, carried from the input into the context unchanged. */
type RunShape = Pick<
  RunInput,
  'sources' | 'destination' | 'destinations' | 'kinds' | 'verify' | 'geoResync' | 'dryRun'
>;

export interface RunContext extends RunShape {
  step: StepName;
  /** When the machine was first started (kept across restores; for rates in `status`). */
  startedAt: number | null;
  /** `move.order` as the run started (absent in snapshots from before the one schedule: by kind). */
  order?: 'together' | 'by-kind';
  /** Which (source, kind) the drain step is on: persisted so a restore re-invokes the same drain. */
  sourceIndex: number;
  kindIndex: number;
  /** The instance's weights before this run changed them (kept for the report and rollback advice). */
  previousWeights: Record<string, number> | null;
  newWeights: Record<string, number> | null;
  weightsWritten: boolean;
  instanceVersion: string | null;
  /** Pre-flight's edition (true EE, false CE, null unknown); absent in checkpoints from before the edition was probed. */
  enterprise?: boolean | null;
  tokenExpiresAt: string | null;
  warnings: string[];
  /** The last pre-flight's notes (room that fits); absent in checkpoints from before they were kept apart. */
  notes?: string[];
  /** Pre-flight's probe per kind (checkpoints from before the probe have none: every kind `listing`). */
  access?: Partial<Record<Kind, KindAccessMode>>;
  /** A dry run's pre-flight: what a real run would be refused for; absent or empty: nothing. */
  wouldRefuse?: string[];
  /** Drain results keyed by `source/kind`; a re-run of a drain overwrites its own entry. */
  drains: Record<string, DrainOutput & DrainInput>;
  verification: VerifyOutput | null;
  geo: GeoOutput | null;
  error: StepFailure | null;
}
