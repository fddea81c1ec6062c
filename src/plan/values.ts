/**
 * The values a plan's fields hold once read: the shapes the field table's readers return and the
 * rest of shardmove uses (repository kinds, credentials, the throttle and schedule sections). The
 * Plan itself is inferred from the field table (types.ts); these are the parts it is made of.
 */

/** Repository kinds, in the plural form the plan and the API paths use. */
export type Kind = 'projects' | 'snippets' | 'groups';

export const KINDS: readonly Kind[] = ['projects', 'snippets', 'groups'];

export type MoveMode = 'throttled' | 'bulk';

/**
 * `move.order`: `together`, every kind on every source in one largest-first schedule (absent means
 * this), or `by-kind`, one drain per source and kind in the plan's order.
 */
export const MOVE_ORDERS = ['together', 'by-kind'] as const;
export type MoveOrder = (typeof MOVE_ORDERS)[number];

/** How the run authenticates. Values are secrets: they live in memory only. */
export type Credentials =
  | { type: 'token'; token: string }
  | {
      type: 'oauth';
      accessToken: string;
      refreshToken: string;
      clientId: string;
      clientSecret: string;
      redirectUri: string;
    };

/** The plan's `throttle:` section, normalised (durations in ms); see src/schedule/gate.ts. */
export interface ThrottlePlan {
  /** p90 API latency above this lowers the cap. */
  latencyP90Ms: number;
  /** Failed moves / ended moves, over recent outcomes. */
  maxFailureRate: number;
  /** 429 answers / answers, over recent responses. */
  max429Rate: number;
  /** Median duration of recent moves over the median of the first ones: above this, Gitaly is slowing down. */
  durationDrift: number;
  /** How often `/-/readiness` is read for the sources' and the destination's health. */
  healthEveryMs: number;
  /** Time without a bad signal before the cap grows by one. */
  increaseEveryMs: number;
  /** The factor a bad signal multiplies the cap by. */
  decrease: number;
}

/** What `throttle: {}` turns on: the defaults of every throttle key (docs/plan.md shows them). */
export const THROTTLE_DEFAULTS: Readonly<ThrottlePlan> = Object.freeze({
  latencyP90Ms: 2_000,
  maxFailureRate: 0.2,
  max429Rate: 0.05,
  durationDrift: 3,
  healthEveryMs: 30_000,
  increaseEveryMs: 30_000,
  decrease: 0.5,
});

/** `schedule:`: maintenance windows in an IANA zone (src/time/windows.ts). */
export interface PlanSchedule {
  timezone: string;
  /** As written, each already checked by the loader. */
  windows: string[];
}

/**
 * `retry.pause_after`, the failure breaker: N failed moves within a window pause the run (a count),
 * or a share of the moves that ended within it, judged once `minMoves` have ended there (a rate).
 */
export type FailureBreaker = FailureCount | FailureRate;

/** The breaker by count: `{failures: 20, within: 15m}`. */
export interface FailureCount {
  failures: number;
  withinMs: number;
}

/** The breaker by rate: `{rate: 5%, within: 15m, min_moves: 50}`; `rate` is a share (0.05). */
export interface FailureRate {
  rate: number;
  withinMs: number;
  minMoves: number;
}

/** One `throttle.rules` entry: a PromQL query and the bound past which it holds the run. */
export interface ThrottleRule {
  name: string;
  query: string;
  /** Holds while the (worst) value is above this (exclusive) ... */
  above: number | null;
  /** ... or below this (exclusive); exactly one of the two is set. */
  below: number | null;
  /** pause: no new move while it holds; cut: the throttle's multiplicative cut. */
  action: 'pause' | 'cut';
  /** How long the condition must hold before it acts (0: at once). */
  forMs: number;
}

/** `capacity:`: the room on the storages that receive, checked before any write and watched during the run. */
export interface CapacityPlan {
  /** Bytes that must stay free on each destination after the drain. */
  keepFreeBytes: number;
  /** Storage name -> its free bytes: declared, or a PromQL query answering them. */
  storages: Record<string, { bytes: number } | { query: string }>;
}

/**
 * `move.until`: a partial drain. `movedBytes`: stop scheduling from each source once that
 * many bytes have left it; `freeBytes`: once the source's free space (from `capacity`) reaches it.
 */
export type MoveUntil = { movedBytes: number } | { freeBytes: number };

/**
 * One name of `move.select`: a project id (a number) or a full path (a project's or a namespace's),
 * and where it was written (`plan.yaml:12:7`, or `pilot.txt:3` for a line of its file), so that
 * pre-flight names the entry it refuses. The plan's hash covers `ref` only.
 */
export interface SelectEntry {
  ref: number | string;
  at: string;
}

/** `move.select` (select-field.ts): what moves, and what never does. */
export interface MoveSelect {
  /** Full paths of groups or users: everything in them and their subgroups. */
  namespaces: SelectEntry[];
  /** Projects by id or full path. */
  projects: SelectEntry[];
  /** Never moved: projects by id or path, namespaces by path. */
  exclude: SelectEntry[];
  /** The select file (absolute path) and its lines, each a project or a namespace. */
  file: { path: string; entries: SelectEntry[] } | null;
}
