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
}
