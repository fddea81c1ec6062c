/**
 * The normalised plan (version 1), as every other module sees it after loading and validation.
 * Durations are milliseconds; secrets are resolved values held only in memory, never persisted.
 */

/** Repository kinds, in the plural form the plan and the API paths use. */
export type Kind = 'projects' | 'snippets' | 'groups';

export const KINDS: readonly Kind[] = ['projects', 'snippets', 'groups'];

export type MoveMode = 'throttled' | 'bulk';

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

/** `schedule:`: maintenance windows in an IANA zone (src/schedule/windows.ts). */
export interface PlanSchedule {
  timezone: string;
  /** As written, each already checked by the loader. */
  windows: string[];
}

export interface Plan {
  version: 1;
  /** Names the checkpoint: state/<name>.db unless --state. */
  name: string;
  instance: {
    /** Base URL without /api/v4, no trailing slash. */
    url: string;
    credentials: Credentials;
    /** User id or username to act as, or null. */
    sudo: string | null;
    /** Per-request timeout in ms. */
    timeoutMs: number;
  };
  move: {
    /** Source storages, drained in this order. */
    from: string[];
    to: string;
    kinds: Kind[];
    mode: MoveMode;
    /** Max moves in flight (throttled mode). */
    concurrency: number;
  };
  /** Merged into the instance's current weights in the weights step. */
  weights: Record<string, number>;
  poll: {
    intervalMs: number;
    /**
     * Shortest gap between two polls when completion prediction asks for an early one (default
     * 250ms; never above `intervalMs`). Optional so plans built in code before issue 11 stay valid.
     */
    minIntervalMs?: number;
    /**
     * A move waiting in `initial`/`scheduled` (GitLab's throttled queue: busy, not broken) longer
     * than this since it was first seen is quarantined as stuck (default 24h).
     */
    stuckScheduledAfterMs: number;
    /**
     * A move running (`started`/`replicated`) longer than this plus the size allowance, counted from
     * when it was first seen running, is quarantined as stuck (default 1h; `stuck_after` is its
     * deprecated name).
     */
    stuckRunningAfterMs: number;
    /** Added to the running limit per GiB of repository, when the size is known (default 30m; 0 with `stuck_after`). */
    stuckRunningPerGbMs: number;
  };
  retry: {
    /** Attempts per item, the first one included. */
    maxAttempts: number;
    backoffMs: number;
  };
  verify: boolean;
  geo: { resync: boolean };
  /** Maintenance windows: nothing new is scheduled outside them (absent or null: always). */
  schedule?: PlanSchedule | null;
  /** Load-aware cap under the operator's (absent or null: off). */
  throttle?: ThrottlePlan | null;
}
