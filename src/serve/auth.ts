/**
 * Who may use the console: whoever holds the token it printed when it started (as Jupyter's), given
 * once in the URL (`/?token=...`, turned into a cookie and taken out of the address bar at once), then
 * carried by the cookie, or by `Authorization: Bearer ...` for automation reading the JSON API. A
 * control request also needs an `Origin` that is the console's own and a page token that only a
 * page the console served holds, so a page of another site cannot drive a run through the
 * operator's browser; automation steers a run with `shardmove control`.
 *
 * The token lives in this process's memory only: never logged, never written to a file.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The start of the cookie's name; the rest names the console (./auth.ts cookieName). */
export const COOKIE = 'shardmove_console';

/**
 * The cookie's name for the console holding `token`: a browser keeps one cookie per name and host
 * whatever the port, so two consoles on one machine (two ports of 127.0.0.1) need two names, or
 * opening the second would log the first out.
 */
export function cookieName(token: string): string {
  return `${COOKIE}_${createHash('sha256').update(`cookie:${token}`).digest('hex').slice(0, 12)}`;
}
/** The header a page's control requests carry its page token in. */
export const PAGE_HEADER = 'x-shardmove-page';
/** Page tokens kept (the newest); an older page's controls are refused and ask for a reload. */
const PAGES_KEPT = 256;

/** 32 random bytes, URL-safe: what the console prints in its URL. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Equal without telling, by its timing, how much of `given` was right. */
export function sameSecret(given: string, secret: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/** The value of cookie `name` in a Cookie header, or null. */
export function cookieOf(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** How a request proved it holds the token, or null when it did not. */
export function authOf(req: IncomingMessage, token: string): 'cookie' | 'bearer' | null {
  const auth = req.headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    // A wrong Authorization header is a wrong token, even with a right cookie beside it.
    return m && sameSecret(m[1] as string, token) ? 'bearer' : null;
  }
  const cookie = cookieOf(req.headers.cookie, cookieName(token));
  return cookie !== null && sameSecret(cookie, token) ? 'cookie' : null;
}

/** The cookie that carries the token: this origin's only, never sent by another site's request. */
export function tokenCookie(token: string): string {
  return `${cookieName(token)}=${token}; Path=/; HttpOnly; SameSite=Strict`;
}

/** The page tokens the console handed out (one per page served), newest kept. */
export class PageTokens {
  private readonly tokens = new Set<string>();

  issue(): string {
    const t = randomBytes(18).toString('base64url');
    this.tokens.add(t);
    if (this.tokens.size > PAGES_KEPT) {
      const oldest = this.tokens.values().next().value as string;
      this.tokens.delete(oldest);
    }
    return t;
  }

  holds(given: string | undefined): boolean {
    if (!given) return false;
    for (const t of this.tokens) if (sameSecret(given, t)) return true;
    return false;
  }
}

/**
 * Whether a control request comes from a page of this console: its `Origin` names the host and port
 * the request was sent to (its Host header), by http or by https (a reverse proxy with TLS in front
 * keeps the Host it was asked for when told to, docs/operations.md). A request without `Origin` is
 * refused: every browser sends one with a POST, and a control is only ever a page's.
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  const host = req.headers.host;
  if (!origin || !host) return false;
  return origin === `http://${host}` || origin === `https://${host}`;
}
