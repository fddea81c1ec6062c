/**
 * Pre-flight can only warn about a token expiring within days; once the drain has a rate, the
 * runtime compares the token's expiry with the estimated end and warns once if the run would
 * outlive its token (it would then stop with an authentication error, resumable with a new token).
 */

/** A warning when `now + etaMs` is at or after the token's expiry date (UTC midnight), else null. */
export function tokenOutlivedWarning(expiresAt: string | null, now: number, etaMs: number | null): string | null {
  if (expiresAt === null || etaMs === null) return null;
  const expiry = Date.parse(`${expiresAt}T00:00:00Z`);
  if (!Number.isFinite(expiry)) return null;
  const end = now + etaMs;
  if (end < expiry) return null;
  return `the run's token expires on ${expiresAt}, before the estimated end (${new Date(end).toISOString().slice(0, 16).replace('T', ' ')} UTC): renew it, or the run will stop there and need a new token to resume`;
}
