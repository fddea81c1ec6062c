/**
 * The delivery worker's decisions, as pure functions: how long to wait before the next attempt, and
 * what an answer means (delivered; try again later; or not again in this process, because the same
 * request would get the same answer). Tested as tables.
 */

/** What one attempt came to. `permanent`: not tried again by this process (the next run tries it once more). */
export type DeliveryResult = { ok: true } | { ok: false; permanent: boolean; error: string };

/** The first retry waits this long, each next one twice as long, up to BACKOFF_MAX_MS. */
export const BACKOFF_FIRST_MS = 1_000;
export const BACKOFF_MAX_MS = 300_000;
/** How long the end of a run waits for what is still undelivered (`run.finished` among it) before it leaves it for the next run. */
export const FINAL_WAIT_MS = 10_000;

/** The wait before the next attempt after `attempts` attempts (the last of them failed). */
export function backoffMs(attempts: number): number {
  const n = Math.max(1, Math.floor(attempts));
  return Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.min(n - 1, 30));
}

/** The statuses a receiver may answer for a moment (overloaded, rate limited, not ready): tried again. */
const TRANSIENT_4XX = new Set([408, 425, 429]);

/**
 * What a webhook's answer means. 2xx is delivered. A redirect is not followed: the event and its
 * token would go to an address the plan does not name, and a POST turned into a GET on the way
 * would deliver nothing; the answer says where it pointed (its origin only). A 4xx other than
 * 408, 425 and 429 would be answered again the same way (a wrong token, a wrong path, a body the
 * receiver refuses), so this process stops trying it; 5xx and the rest are tried again.
 */
export function httpResult(status: number, location: string | null, text: string): DeliveryResult {
  if (status >= 200 && status < 300) return { ok: true };
  const said = text.trim() === '' ? '' : `: ${text.trim()}`;
  if (status >= 300 && status < 400) {
    const to = originOf(location);
    return {
      ok: false,
      permanent: true,
      error: `HTTP ${status}: a redirect${to ? ` to ${to}` : ''}, not followed (shardmove sends an event and its token only to the url the plan names: write the address it points to)`,
    };
  }
  const permanent = status >= 400 && status < 500 && !TRANSIENT_4XX.has(status);
  return { ok: false, permanent, error: `HTTP ${status}${said}` };
}

function originOf(location: string | null): string | null {
  if (!location) return null;
  try {
    return new URL(location).origin;
  } catch {
    return 'a relative address';
  }
}

/**
 * Why a command could not be started: the same would happen again (not found, not executable, not
 * a program) until someone fixes it, so this process stops trying it.
 */
export function spawnResult(code: string | undefined, message: string): DeliveryResult {
  const why: Record<string, string> = {
    ENOENT: 'not found',
    EACCES: 'not executable (chmod +x it), or a directory',
    ENOEXEC: 'not a program (a script needs a #! line)',
    ENOTDIR: 'a part of its path is not a directory',
    EISDIR: 'a directory',
  };
  const known = code !== undefined ? why[code] : undefined;
  return {
    ok: false,
    permanent: known !== undefined,
    error: `cannot start: ${known ?? message}${code && known ? ` (${code})` : ''}`,
  };
}
