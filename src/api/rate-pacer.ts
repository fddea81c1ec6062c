/**
 * Paces GETs below GitLab's application rate limits, and waits out a 429 however long it takes.
 *
 * GitLab limits some read endpoints per user in fixed windows aligned on the epoch
 * (`Gitlab::ApplicationRateLimiter`: `GET /projects` 2,000 per 10 minutes, `GET /projects/:id` 400
 * per minute, the groups routes per minute ...), generally from 18.1 (from 17.1 behind a feature
 * flag), and shows each threshold in `GET /application/settings` (`projects_api_limit` ...). The
 * client's ordinary retries (a few seconds, a Retry-After capped at 5 minutes) cannot outlast a
 * 10-minute window, so a throttled GET would fail its step.
 *
 * So: once the settings name a threshold on a release that checks it (or once the instance answered
 * a 429 for that route, on any release), the pacer counts the route's requests per window of the
 * server's clock (read from every answer's `Date`, so a skewed local clock does not matter) and lets
 * at most `budget` start in one, a little below the threshold; a request sent within a second of a
 * window's edge counts in both windows it may land in. A 429 is never an error for a GET: the
 * route waits until its window has ended on the server's clock (GitLab's windows are fixed on the
 * epoch), or for `Retry-After` when that comes first (GitLab 18.5+ sends the window's length), else
 * for the route's window, or a minute for a route without a known limit, and then the request is
 * sent again. A wait re-reads the server's clock every second (asking the server for it, with a
 * request no limit counts, when no answer came for 5 s). While a route waits, `hold()` says
 * until when (on the local clock), for the progress line and status ("HELD by the instance's rate
 * limit until HH:MM:SS").
 *
 * Routes and windows are GitLab's (lib/gitlab/application_rate_limiter.rb); paths are relative to
 * /api/v4, as the client's requests name them.
 */

/** One of GitLab's application limits on a route the orchestrator reads. */
export interface RouteLimitDef {
  /** The field of `GET /application/settings` that holds the threshold. */
  setting: string;
  intervalMs: number;
  /** The route in words. */
  route: string;
  /** Matches the route's path (relative to /api/v4, without the query). */
  path: RegExp;
}

const SEGMENT = '[^/]+';

/**
 * GitLab's keys for the routes the orchestrator calls (unknown routes are not paced), each with its
 * window: the threshold is the setting `<key>_limit`, and `:id` in the route stands for one path segment.
 */
export const ROUTE_LIMITS: Readonly<Record<string, RouteLimitDef>> = routeLimitsOf({
  projects_api: { route: 'GET /projects', intervalMs: 600_000 },
  project_api: { route: 'GET /projects/:id', intervalMs: 60_000 },
  groups_api: { route: 'GET /groups', intervalMs: 60_000 },
  group_api: { route: 'GET /groups/:id', intervalMs: 60_000 },
  group_projects_api: { route: 'GET /groups/:id/projects', intervalMs: 60_000 },
  user_projects_api: { route: 'GET /users/:id/projects', intervalMs: 60_000 },
});

function routeLimitsOf(
  routes: Record<string, { route: string; intervalMs: number }>,
): Readonly<Record<string, RouteLimitDef>> {
  return Object.fromEntries(
    Object.entries(routes).map(([key, { route, intervalMs }]) => {
      const path = new RegExp(`^${route.slice('GET '.length).replaceAll(':id', SEGMENT)}$`);
      return [key, { setting: `${key}_limit`, intervalMs, route, path }];
    }),
  );
}

/** The wait after a 429 whose route and Retry-After are both unknown. */
export const UNKNOWN_WINDOW_MS = 60_000;
/** Past the end of the server's window before sending again: its clock is read to the second. */
const EDGE_MARGIN_MS = 1_000;
/** A wait re-reads the server's clock this often. */
const WAIT_SLICE_MS = 1_000;
/** A wait with no answer seen for this long asks the server for its clock (`probe`). */
const PROBE_AFTER_MS = 5_000;

/** What holds requests back now: the route's key, and until when (ms on the local clock). */
export interface RateHold {
  key: string | null;
  until: number;
  /** "GET /projects: 2000 per 10m (projects_api)", or what the 429 said. */
  reason: string;
}

export interface RatePacer {
  /** Reads the thresholds from `GET /application/settings`'s body; `checked`: the release checks them (18.1+). */
  configure(settings: unknown, checked: boolean): void;
  /** An answer's `Date`: the server's clock, which its windows follow. */
  observe(date: string | null): void;
  /** Waits, when needed, until a GET of `path` may start, and counts it. */
  beforeSend(method: string, path: string, signal?: AbortSignal): Promise<void>;
  /**
   * A 429 answered a GET of `path`: waits out the route's window (see the module's text); the
   * caller sends the request again after it. Never throws but for an abort.
   */
  waitOut(path: string, retryAfterMs: number | null, date: string | null, signal?: AbortSignal): Promise<void>;
  /** The hold in force now, or null. */
  hold(): RateHold | null;
  /** The paced limits in force: key to { limit, budget, intervalMs }. */
  limits(): Record<string, { limit: number; budget: number; intervalMs: number }>;
  /** 429s answered so far, per key (`other` for routes without a known limit). */
  throttled(): Record<string, number>;
}

export interface RatePacerOptions {
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Every change of the hold (null: nothing holds). */
  onHold?: (hold: RateHold | null) => void;
  /**
   * Asks the server anything that is not rate limited, so that its answer's `Date` re-reads the
   * server's clock during a long wait with nothing else in flight. Its failures are its own.
   */
  probe?: (signal?: AbortSignal) => Promise<void>;
}

/** The first release whose endpoints check these limits without a feature flag. */
export const RATE_LIMITS_CHECKED_SINCE = [18, 1] as const;

/** Whether GitLab `version` checks the limits it shows (17.1 to 18.0 only behind a flag, off by default). */
export function checksApplicationRateLimits(version: string): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major !== RATE_LIMITS_CHECKED_SINCE[0]
    ? major > RATE_LIMITS_CHECKED_SINCE[0]
    : minor >= RATE_LIMITS_CHECKED_SINCE[1];
}

/** The key of the limit on `path`, or null. */
export function routeKey(path: string): string | null {
  const bare = path.split('?')[0] ?? path;
  for (const [key, def] of Object.entries(ROUTE_LIMITS)) if (def.path.test(bare)) return key;
  return null;
}

/** Requests let start per window for a threshold: a little below it, for requests in flight at a window's edge. */
export function budgetOf(limit: number): number {
  return Math.max(1, limit - Math.max(1, Math.ceil(limit * 0.05)));
}

/** Creates a pacer with no limits known yet. */
export function createRatePacer(opts: RatePacerOptions): RatePacer {
  const paced = new Map<string, { limit: number; budget: number; intervalMs: number }>();
  /** Requests started per key and server window (the window's number since the epoch). */
  const started = new Map<string, Map<number, number>>();
  /** A key held back after a 429, until this time on the server's clock. */
  const blocked = new Map<string, number>();
  const counts: Record<string, number> = {};
  /** Thresholds the settings named, armed only once the release checks them or a 429 came. */
  const named = new Map<string, number>();
  /** The server's clock minus ours, from the answers' `Date` (0 until one is seen). */
  let offset = 0;
  /** When the last `Date` was read (our clock). */
  let observedAt = -Infinity;
  let current: RateHold | null = null;
  const serverNow = () => opts.now() + offset;

  const describe = (key: string): string => {
    const p = paced.get(key);
    const route = ROUTE_LIMITS[key]?.route ?? key;
    return p ? `${route}: ${p.limit} per ${formatWindow(p.intervalMs)} (${key})` : `${route} (${key})`;
  };

  const setHold = (next: RateHold | null) => {
    if (next === null && current === null) return;
    if (next && current && next.key === current.key && Math.abs(next.until - current.until) < EDGE_MARGIN_MS) return;
    current = next;
    opts.onHold?.(next);
  };

  const arm = (key: string, limit: number) => {
    const def = ROUTE_LIMITS[key];
    if (!def || limit <= 0) {
      paced.delete(key);
      return;
    }
    paced.set(key, { limit, budget: budgetOf(limit), intervalMs: def.intervalMs });
  };

  /** The windows a request sent now may land in: near an edge, both (our reading of the server's clock is ±1 s). */
  const windowsOf = (t: number, intervalMs: number): number[] => {
    const w = Math.floor(t / intervalMs);
    const into = t - w * intervalMs;
    if (into < EDGE_MARGIN_MS) return [w - 1, w];
    if (intervalMs - into < EDGE_MARGIN_MS) return [w, w + 1];
    return [w];
  };

  function observe(date: string | null): void {
    if (date === null) return;
    const at = Date.parse(date);
    // `Date` is whole seconds: the server's time is within the second after it.
    if (Number.isNaN(at)) return;
    offset = at + 500 - opts.now();
    observedAt = opts.now();
  }

  /**
   * Waits until `target` on the server's clock, in slices of a second, so that a better reading of
   * the server's clock (any answer's `Date`, polls go on meanwhile) moves the end.
   */
  async function waitForServer(key: string | null, target: number, reason: string, signal?: AbortSignal) {
    for (;;) {
      const left = target - serverNow();
      if (left <= 0) break;
      setHold({ key, until: target - offset, reason });
      await opts.sleep(Math.min(left, WAIT_SLICE_MS), signal);
      if (opts.probe && opts.now() - observedAt >= PROBE_AFTER_MS && target - serverNow() > 0) {
        observedAt = opts.now();
        await opts.probe(signal).catch(() => undefined);
      }
    }
    if (current && current.key === key) setHold(null);
  }

  return {
    configure(settings, checked) {
      if (typeof settings !== 'object' || settings === null) return;
      const s = settings as Record<string, unknown>;
      for (const [key, def] of Object.entries(ROUTE_LIMITS)) {
        const v = s[def.setting];
        if (typeof v !== 'number' || !Number.isFinite(v)) continue;
        named.set(key, v);
        if (checked || paced.has(key)) arm(key, v);
      }
    },

    observe,

    async beforeSend(method, path, signal) {
      if (method !== 'GET') return;
      const key = routeKey(path);
      if (key === null) return;
      for (;;) {
        const until = blocked.get(key) ?? 0;
        if (until > serverNow()) {
          await waitForServer(key, until, `the instance answered 429 on ${describe(key)}`, signal);
          continue;
        }
        const p = paced.get(key);
        if (!p) return;
        const per = started.get(key) ?? new Map<number, number>();
        started.set(key, per);
        const t = serverNow();
        const windows = windowsOf(t, p.intervalMs);
        for (const w of per.keys()) if (w < (windows[0] as number)) per.delete(w);
        if (windows.every((w) => (per.get(w) ?? 0) < p.budget)) {
          for (const w of windows) per.set(w, (per.get(w) ?? 0) + 1);
          return;
        }
        // The next window, once surely begun on the server.
        const next = (Math.floor(t / p.intervalMs) + 1) * p.intervalMs + EDGE_MARGIN_MS;
        await waitForServer(key, next, describe(key), signal);
      }
    },

    async waitOut(path, retryAfterMs, date, signal) {
      observe(date);
      const key = routeKey(path);
      counts[key ?? 'other'] = (counts[key ?? 'other'] ?? 0) + 1;
      const def = key ? ROUTE_LIMITS[key] : undefined;
      // Paced from now on at the threshold the settings named; without one, each window is used
      // until its 429 (a few per window), since a guess could only be slower than the instance.
      const threshold = key ? named.get(key) : undefined;
      if (key && threshold !== undefined && !paced.has(key)) arm(key, threshold);
      if (!key || !def) {
        await waitForServer(
          null,
          serverNow() + (retryAfterMs ?? UNKNOWN_WINDOW_MS),
          'the instance answered 429',
          signal,
        );
        return;
      }
      const t = serverNow();
      // GitLab's windows are fixed on the epoch: the one that refused ends at the next multiple.
      const edge = date !== null ? (Math.floor(t / def.intervalMs) + 1) * def.intervalMs + EDGE_MARGIN_MS : null;
      const target =
        edge !== null
          ? Math.min(edge, t + (retryAfterMs ?? Infinity) + EDGE_MARGIN_MS)
          : t + (retryAfterMs ?? def.intervalMs);
      blocked.set(key, Math.max(blocked.get(key) ?? 0, target));
      await waitForServer(key, target, `the instance answered 429 on ${describe(key)}`, signal);
    },

    hold() {
      if (current && current.until <= opts.now()) current = null;
      return current;
    },

    limits() {
      return Object.fromEntries(paced);
    },

    throttled() {
      return { ...counts };
    },
  };
}

function formatWindow(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}
