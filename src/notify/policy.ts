/**
 * The delivery worker's decisions, as pure functions: how long to wait before the next attempt, and
 * what an answer means (delivered; try again later; or not again in this process, because the same
 * request would get the same answer). Tested as tables.
 */
import { showUrl } from '../plan/url-credentials.js';

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

/** How a redirect's target is shown: resolved against the request's URL, and scrubbed by the caller's scrub. */
export interface RedirectContext {
  /** The URL the request went to: a relative Location resolves against it. */
  base: URL;
  /** Scrubs a text of the secrets the sender knows. */
  scrub(text: string): string;
}

/** The longest Location quoted when it is not an address at all. */
const MAX_LOCATION = 200;

/**
 * What a webhook's answer means. 2xx is delivered. A redirect is not followed: the event and its
 * token would go to an address the plan does not name, and a POST turned into a GET on the way
 * would deliver nothing; the answer says where it pointed (resolved as a client would, without
 * credentials, scrubbed). A 4xx other than 408, 425 and 429 would be answered again the same way
 * (a wrong token, a wrong path, a body the receiver refuses), so this process stops trying it;
 * 5xx and the rest are tried again. `text` is the answer's words, scrubbed already.
 */
export function httpResult(
  status: number,
  location: string | null,
  text: string,
  redirect: RedirectContext = { base: new URL('http://invalid.invalid/'), scrub: (t) => t },
): DeliveryResult {
  if (status >= 200 && status < 300) return { ok: true };
  const said = text.trim() === '' ? '' : `: ${text.trim()}`;
  if (status >= 300 && status < 400) {
    return { ok: false, permanent: true, error: `HTTP ${status}: ${redirectWords(location, redirect)}` };
  }
  const permanent = status >= 400 && status < 500 && !TRANSIENT_4XX.has(status);
  return { ok: false, permanent, error: `HTTP ${status}${said}` };
}

function redirectWords(location: string | null, ctx: RedirectContext): string {
  const rule = 'shardmove sends an event and its token only to the url the plan names';
  const given = location?.trim() ?? '';
  if (given === '') return `a redirect without a Location, not followed (${rule})`;
  let to: URL;
  try {
    to = new URL(given, ctx.base);
  } catch {
    const quoted = ctx.scrub(given).replace(/\s+/g, ' ');
    const shown = quoted.length > MAX_LOCATION ? `${quoted.slice(0, MAX_LOCATION - 3)}...` : quoted;
    return `a redirect to ${JSON.stringify(shown)}, which is not an address, not followed (${rule})`;
  }
  const clean = ctx.scrub(showUrl(to));
  const shown = clean.length > MAX_LOCATION ? `${clean.slice(0, MAX_LOCATION - 3)}...` : clean;
  if (to.protocol !== 'http:' && to.protocol !== 'https:')
    return `a redirect to ${shown}, not an http(s) address, not followed (${rule})`;
  return `a redirect to ${shown}, not followed (${rule}: write the address it points to, if it is the right one)`;
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
