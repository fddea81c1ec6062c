/**
 * GitLab's application rate limits on the projects and groups API (`Gitlab::ApplicationRateLimiter`
 * through `API::Helpers::RateLimiter#check_rate_limit_by_user_or_ip!`), per release:
 *
 * - Before 17.1 none of them exists, except the anonymous `GET /projects` limit (GA in 16.0).
 * - 17.1 to 18.0: the settings exist with GitLab's defaults (and show in `GET /application/settings`),
 *   but the endpoints check them only with the `rate_limit_groups_and_projects_api` feature flag on
 *   (off by default on self-managed).
 * - From 18.1 the endpoints always check them.
 *
 * The seed's `instance.rate_limits` sets a threshold by GitLab's key (`projects_api: 2000`), 0 turns
 * one off (as GitLab's `_throttled?` does). Windows are fixed and aligned on the epoch:
 * `Time.now.to_i.divmod(interval)`, on the sandbox's clock; every request counts, the refused ones
 * too, and a request is refused once its window's count is above the threshold. The scope is the
 * user the request acts as (after sudo), or the client's IP when anonymous. The answer is
 * `render_api_error!({ error: ... }, 429)`: `{"message":{"error":"This endpoint has been requested too
 * many times. Try again later."}}`, with `Retry-After` (the key's interval, in seconds) from 18.5
 * (MR 206603, `too_many_requests!`). Every answer carries `Date` on the sandbox's clock (../server.ts).
 */
import { atLeast, parseRelease } from '../auth/token-types.js';
import type { Db } from '../db.js';
import { perDatabase } from '../db.js';
import type { RequestContext } from '../http/context.js';
import { SandboxHttpError } from '../http/errors.js';
import { RATE_LIMIT_KEYS, RATE_LIMITS } from './rate-limit-keys.js';
import type { RateLimitDef, RateLimitKey } from './rate-limit-keys.js';

export { RATE_LIMIT_KEYS, RATE_LIMITS } from './rate-limit-keys.js';
export type { RateLimitKey } from './rate-limit-keys.js';

/** The flag that gates the 17.1 limits before they became generally available. */
export const RATE_LIMIT_FLAG = 'rate_limit_groups_and_projects_api';
/** The first release that checks them without the flag. */
export const RATE_LIMITS_GA_SINCE = [18, 1] as const;
/** The first release whose 429 names the window in `Retry-After`. */
export const RETRY_AFTER_SINCE = [18, 5] as const;
export const RATE_LIMITED_MESSAGE = 'This endpoint has been requested too many times. Try again later.';

const statements = perDatabase((db: Db) => ({
  flag: db.prepare<[string], { value: string }>('SELECT value FROM features WHERE name = ?'),
}));

/** The thresholds in force on `version` (seeded values over GitLab's defaults); absent keys do not exist yet. */
export function rateLimitSettings(
  version: string,
  seeded: Partial<Record<RateLimitKey, number>> | undefined,
): Partial<Record<RateLimitKey, number>> {
  const release = parseRelease(version);
  const out: Partial<Record<RateLimitKey, number>> = {};
  for (const key of RATE_LIMIT_KEYS) {
    const def: RateLimitDef = RATE_LIMITS[key];
    if (atLeast(release, def.since)) out[key] = seeded?.[key] ?? def.threshold;
  }
  return out;
}

/** The settings' fields as `GET /application/settings` shows them on `version`. */
export function renderRateLimitSettings(
  version: string,
  seeded: Partial<Record<RateLimitKey, number>> | undefined,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(rateLimitSettings(version, seeded)))
    out[RATE_LIMITS[key as RateLimitKey].setting] = n;
  return out;
}

/** Whether the endpoints of `version` check a flagged limit, given the instance's feature flags. */
export function checksFlaggedLimits(db: Db, version: string): boolean {
  const release = parseRelease(version);
  if (atLeast(release, RATE_LIMITS_GA_SINCE)) return true;
  if (!atLeast(release, RATE_LIMITS.projects_api.since)) return false;
  const row = statements(db).flag.get(RATE_LIMIT_FLAG);
  return row !== undefined && row.value.trim() === 'true';
}

/** Counts per window, kept per sandbox (in memory, as GitLab keeps them in Redis). */
const counters = new WeakMap<object, Map<string, number>>();

/** Counts this request against the limit guarding `route` and throws GitLab's 429 when it is over. */
export function checkRateLimit(ctx: RequestContext, route: string): void {
  const { state } = ctx;
  const anonymous = ctx.caller === null;
  let key: RateLimitKey | null = null;
  for (const k of RATE_LIMIT_KEYS) {
    const def: RateLimitDef = RATE_LIMITS[k];
    if (def.route === route && (def.anonymousOnly === true) === anonymous) key = k;
  }
  if (key === null) return;
  const def: RateLimitDef = RATE_LIMITS[key];
  const threshold = rateLimitSettings(state.config.version, state.config.rate_limits)[key];
  if (threshold === undefined || threshold === 0) return;
  if (def.flagged && !checksFlaggedLimits(state.db, state.config.version)) return;
  const nowMs = state.clock.now();
  const period = Math.floor(nowMs / 1000 / def.intervalS);
  const scope = ctx.caller ? `user:${ctx.caller.user.id}` : `ip:${ctx.remoteAddress ?? 'unknown'}`;
  let counts = counters.get(state.db);
  if (!counts) counters.set(state.db, (counts = new Map()));
  const id = `${key}|${scope}|${period}`;
  const value = (counts.get(id) ?? 0) + 1;
  counts.set(id, value);
  if (counts.size > 10_000) prune(counts, nowMs);
  if (value <= threshold) return;
  state.log.info({ key, scope, value, threshold, period }, 'application rate limit hit');
  const headers: Record<string, string> = {};
  if (atLeast(parseRelease(state.config.version), RETRY_AFTER_SINCE)) headers['retry-after'] = String(def.intervalS);
  throw new SandboxHttpError(429, { message: { error: RATE_LIMITED_MESSAGE } }, headers);
}

/** Drops the counts of windows that have ended (the keys' Redis expiry). */
function prune(counts: Map<string, number>, nowMs: number): void {
  for (const id of counts.keys()) {
    const [key, , period] = id.split('|') as [RateLimitKey, string, string];
    const def: RateLimitDef | undefined = RATE_LIMITS[key];
    if (!def || Number(period) < Math.floor(nowMs / 1000 / def.intervalS)) counts.delete(id);
  }
}
