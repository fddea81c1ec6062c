/**
 * The one HTTP client: undici with keep-alive, timeouts on every phase, credentials from a provider,
 * and a retry policy given as data. GET and PUT (idempotent: PUT of the full settings object) are
 * retried on network errors, 5xx and 429; POST and DELETE are sent once, and a failure that leaves
 * their effect unknown becomes ApiAmbiguousError so the caller re-reads the server's state.
 */
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import { scrubServerText } from '../secrets/registry.js';
import { systemClock } from '../shared/clock.js';
import { SHARDMOVE_VERSION } from './version.js';
import type { CredentialProvider } from './auth.js';
import type { RatePacer } from './rate-pacer.js';
import { GATEWAY_STATUSES, outageCause } from './outage.js';
import type { OutageGate } from './outage.js';
import {
  ApiAmbiguousError,
  ApiForbiddenError,
  ApiHttpError,
  ApiNetworkError,
  ApiNotFoundError,
  ApiRateLimitedError,
  ApiTimeoutError,
  ApiUnauthorizedError,
  DryRunBlockedError,
} from './errors.js';
import type { ApiError, RequestRef } from './errors.js';

/** The methods the client sends; GET and PUT are idempotent, POST and DELETE are not. */
export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** How often and how patiently idempotent requests are repeated. */
export interface RetryPolicy {
  /** Attempts in all, the first included (1 = no retry). */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** 0..1: the share of each delay that is randomised (0.5 = between 50% and 100% of it). */
  jitter: number;
  /** The longest Retry-After we honour; longer answers are waited for this long. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  jitter: 0.5,
  maxRetryAfterMs: 300_000,
};

/** One attempt, as the event log and the stats see it. Never contains headers or token values. */
export interface RequestEvent {
  method: HttpMethod;
  /** Path with the query, sensitive query parameters removed. */
  path: string;
  attempt: number;
  mutating: boolean;
  /** Response only: HTTP status, or null on a network error or timeout. */
  status?: number | null;
  durationMs?: number;
  errorCode?: string | null;
}

/** Options of `createClient`. */
export interface ClientOptions {
  /** Instance base URL without /api/v4. */
  baseUrl: string;
  credentials: CredentialProvider;
  sudo?: string | null;
  /** Connect, headers and body timeout of each attempt. */
  timeoutMs: number;
  /** Dry run: refuse every mutating request before sending it. */
  readOnly?: boolean;
  retry?: Partial<RetryPolicy>;
  /** Sizes the keep-alive pool (connections = concurrency + 4). */
  concurrency?: number;
  /** Use this dispatcher (tests: MockAgent) instead of a new Agent; it is not closed by close(). */
  dispatcher?: Dispatcher;
  userAgent?: string;
  onRequest?: (e: RequestEvent) => void;
  onResponse?: (e: RequestEvent) => void;
  /**
   * Aborts every request and backoff wait (shutdown); combined with each request's own signal. The
   * request rejects with the signal's reason; an aborted POST may have been applied (reconcile).
   */
  signal?: AbortSignal;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  random?: () => number;
  /**
   * GitLab's application rate limits (./rate-pacer.ts): GETs wait for it before they are sent, and a
   * GET answered 429 waits out its window and is sent again, however long that takes, without
   * counting against `retry`. Without it a 429 is retried like a 5xx.
   */
  pacer?: RatePacer;
  /**
   * Instance outages (./outage.ts): an idempotent request out of retries on a network error, a
   * timeout or a 502/503/504 waits here for the instance instead of failing. Absent: it fails.
   */
  outage?: OutageGate;
}

/** One logical request (the client may send it several times, see the retry policy). */
export interface RequestOptions {
  method: HttpMethod;
  /** Relative to /api/v4, or to the base URL when `root` is set (/-/readiness, /oauth/token). */
  path: string;
  query?: Record<string, string | number | boolean | null | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  root?: boolean;
  /** Send no credentials (health probes). */
  anonymous?: boolean;
  /** Non-2xx statuses whose body the caller wants instead of an error (readiness answers 503). */
  acceptStatus?: number[];
  /** A POST that changes nothing (POST /admin/token inspection): allowed in read-only mode, retried like a GET. */
  readOnlySafe?: boolean;
  /** Extra secret values to scrub from errors (a token sent in the body). */
  secrets?: string[];
  signal?: AbortSignal;
}

/** A successful (2xx or accepted) answer, its body fully read. */
export interface ApiResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, or the text when the body is not JSON, or null when empty. */
  body: unknown;
  /**
   * The path first asked (with /api/v4) when the instance redirected a GET to a project's id (a
   * renamed or transferred project named by a former path) and the client followed it; else absent.
   */
  redirectedFrom?: string;
}

/** The client: one request function over a shared keep-alive pool. */
export interface ApiClient {
  request(opts: RequestOptions): Promise<ApiResponse>;
  /** Attempts sent so far, and how many of them were mutating. */
  stats(): { requests: number; mutating: number };
  close(): Promise<void>;
  readonly dispatcher: Dispatcher;
  readonly userAgent: string;
}

/** `shardmove/<version>`, so an instance's logs show which tool and release sent a request. */
export const USER_AGENT = `shardmove/${SHARDMOVE_VERSION}`;

const SENSITIVE_QUERY = new Set([
  'private_token',
  'access_token',
  'job_token',
  'token',
  'refresh_token',
  'client_secret',
]);
const TIMEOUT_PHASES: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect',
  UND_ERR_HEADERS_TIMEOUT: 'headers',
  UND_ERR_BODY_TIMEOUT: 'body',
};
/** Failures that happen before the request left: even a POST was certainly not performed. */
const NOT_SENT = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** Creates the client. `close()` closes the pool it created (not an injected dispatcher). */
export function createClient(opts: ClientOptions): ApiClient {
  const base = new URL(opts.baseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...opts.retry };
  const now = opts.now ?? systemClock.now;
  const random = opts.random ?? Math.random;
  const sleep = opts.sleep ?? systemClock.sleep;
  const userAgent = opts.userAgent ?? USER_AGENT;
  const owned = opts.dispatcher === undefined;
  const dispatcher = opts.dispatcher ?? createPool(opts.timeoutMs, opts.concurrency ?? 10);
  const counts = { requests: 0, mutating: 0 };

  async function request(r: RequestOptions): Promise<ApiResponse> {
    const askedPath = `${prefix}${r.root ? '' : '/api/v4'}${r.path}`;
    let fullPath = askedPath;
    let ref: RequestRef = { method: r.method, path: fullPath };
    let redirected = false;
    const mutating = r.method !== 'GET' && r.readOnlySafe !== true;
    if (opts.readOnly && mutating) throw new DryRunBlockedError(ref);
    const query = buildQuery(r.query);
    const loggedQuery = buildQuery(r.query, SENSITIVE_QUERY);
    // A POST that only reads (token inspection) is as safe to repeat as a GET.
    const idempotent = r.method === 'GET' || r.method === 'PUT' || r.readOnlySafe === true;
    const payload = r.body === undefined ? undefined : JSON.stringify(r.body);
    const signal = r.signal && opts.signal ? AbortSignal.any([r.signal, opts.signal]) : (r.signal ?? opts.signal);
    let refreshed = false;
    let failures = 0;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      if (opts.pacer && !r.root) await opts.pacer.beforeSend(r.method, r.path, signal);
      const auth = r.anonymous ? {} : await opts.credentials.headers();
      const headers: Record<string, string> = { accept: 'application/json', 'user-agent': userAgent, ...auth };
      if (payload !== undefined) headers['content-type'] = 'application/json';
      if (opts.sudo && !r.anonymous) headers['sudo'] = opts.sudo;
      const event: RequestEvent = { method: r.method, path: fullPath + loggedQuery, attempt, mutating };
      counts.requests++;
      if (mutating) counts.mutating++;
      opts.onRequest?.(event);
      const started = now();
      let error: ApiError | null = null;
      let answer: { status: number; headers: ApiResponse['headers']; text: string } | null = null;
      try {
        const res = await dispatcher.request({
          origin: base.origin,
          path: fullPath + query,
          method: r.method,
          headers,
          body: payload,
          signal,
          headersTimeout: opts.timeoutMs,
          bodyTimeout: opts.timeoutMs,
        });
        // Read the whole body on every path: an unread body holds the keep-alive socket. Scrubbed
        // before anything parses or quotes it: a server or proxy may echo a credential it was sent.
        const text = scrubServerText(await res.body.text(), [...opts.credentials.secrets(), ...(r.secrets ?? [])]);
        answer = { status: res.statusCode, headers: res.headers, text };
        if (opts.pacer) opts.pacer.observe(headerValue(res.headers['date']));
      } catch (cause) {
        if (signal?.aborted) throw signal.reason;
        error = networkError(ref, cause, idempotent);
      }
      let retryAfterMs: number | null = null;
      let body: unknown = null;
      let follow: string | null = null;
      if (answer) {
        body = parseBody(answer.text, answer.headers['content-type']);
        if (answer.status >= 300 && answer.status < 400 && !r.acceptStatus?.includes(answer.status)) {
          const rule = redirectRule(base, prefix, r.method, redirected, answer.headers['location']);
          if (rule.follow !== null) follow = rule.follow;
          else error = new ApiHttpError(ref, answer.status, rule.refusal, body);
        } else if ((answer.status < 200 || answer.status >= 300) && !r.acceptStatus?.includes(answer.status)) {
          retryAfterMs = parseRetryAfter(answer.headers['retry-after'], now());
          error = httpError(ref, answer.status, body, retryAfterMs);
        }
      }
      // Outside the try: a failing hook must not be mistaken for a network error.
      opts.onResponse?.({
        ...event,
        status: answer?.status ?? null,
        durationMs: now() - started,
        errorCode: error?.code ?? null,
      });
      // Any answer but a gateway's shows the instance is up; the other failures start or extend an outage.
      const down = error ? outageCause(error) : null;
      if (answer && !(down !== null && GATEWAY_STATUSES.has(answer.status))) opts.outage?.answered(now());
      if (down !== null) opts.outage?.failed(down, started);
      if (follow !== null) {
        // The same request once more at the project's id; attempts and retries carry on as one request.
        fullPath = follow;
        redirected = true;
        ref = { method: r.method, path: fullPath };
        continue;
      }
      if (answer && !error)
        return !redirected
          ? { status: answer.status, headers: answer.headers, body }
          : { status: answer.status, headers: answer.headers, body, redirectedFrom: askedPath };
      if (!error) throw new Error('unreachable: no answer and no error');
      if (error instanceof ApiUnauthorizedError && !refreshed && !r.anonymous) {
        // A 401 is decided before the endpoint runs, so resending even a POST cannot double it.
        refreshed = true;
        if (await opts.credentials.onUnauthorized(error, auth)) continue;
      }
      if (opts.pacer && error instanceof ApiRateLimitedError && r.method === 'GET' && !r.root) {
        // An application rate limit's window may last ten minutes: wait it out, never fail on it.
        await opts.pacer.waitOut(r.path, retryAfterMs, headerValue(answer?.headers['date']), signal);
        continue;
      }
      if (!idempotent) throw ambiguousIfUnknown(ref, error);
      if (!error.retryable) throw error;
      if (++failures >= policy.maxAttempts) {
        if (down === null || !opts.outage) throw error;
        // Out of retries in an outage: wait for the instance, then send it again with fresh retries.
        await opts.outage.hold(down, signal);
        failures = 0;
        continue;
      }
      await sleep(
        retryAfterMs !== null ? Math.min(retryAfterMs, policy.maxRetryAfterMs) : backoff(policy, failures, random),
        signal,
      );
    }
  }

  /** The outage gate's probe: one GET of /version, its answer's status alone counting. */
  async function probe(signal?: AbortSignal): Promise<string | null> {
    const path = `${prefix}/api/v4/version`;
    try {
      const auth = await opts.credentials.headers();
      const res = await dispatcher.request({
        origin: base.origin,
        path,
        method: 'GET',
        headers: { accept: 'application/json', 'user-agent': userAgent, ...auth },
        signal: signal ?? opts.signal,
        headersTimeout: opts.timeoutMs,
        bodyTimeout: opts.timeoutMs,
      });
      await res.body.dump();
      return GATEWAY_STATUSES.has(res.statusCode) ? `HTTP ${res.statusCode}` : null;
    } catch (cause) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      return outageCause(networkError({ method: 'GET', path }, cause, true)) ?? 'no answer';
    }
  }
  opts.outage?.setProbe(probe);

  return {
    request,
    stats: () => ({ ...counts }),
    async close() {
      if (owned) await dispatcher.close();
    },
    dispatcher,
    userAgent,
  };
}

/**
 * Most sockets the pool opens to the instance. Moves in flight are not requests in flight: a
 * thousand moves need a thousand POSTs over time, not a thousand sockets at once. More sockets
 * than this only cost both ends connection setup and socket bookkeeping (against the sandbox, 32
 * sockets gave the same throughput and CPU as 1,004); requests beyond it wait in the pool's queue.
 */
export const MAX_CONNECTIONS = 32;

/**
 * A keep-alive agent sized for `concurrency` requests in flight (at most MAX_CONNECTIONS sockets),
 * with every timeout set. Undici checks headers/body timeouts on a coarse timer (about 1 s), so
 * sub-second timeouts round up.
 */
export function createPool(timeoutMs: number, concurrency: number): Dispatcher {
  return new Agent({
    connections: Math.min(concurrency + 4, MAX_CONNECTIONS),
    keepAliveTimeout: 30_000,
    connectTimeout: timeoutMs,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}

/** A project's own route under the API, where GitLab sends a GET that named a project by a former path. */
const PROJECT_ID_ROUTE = /^\/api\/v4\/projects\/\d+(?:\/[A-Za-z0-9_-]+)*$/;

/**
 * Whether a 3xx answer to a request is followed, and where to. Only a GET, only once, only to the
 * same origin and only to a project's own route by id (`/api/v4/projects/<id>[/...]`), which is
 * the one redirect GitLab's API sends (a project named by a former path). Anything else would send
 * the credentials somewhere the operator did not name, so it becomes an error that says where the
 * answer pointed and why it was not followed (never a bare status). The Location's query is not
 * quoted: a server may have put a secret there.
 */
export function redirectRule(
  base: URL,
  prefix: string,
  method: HttpMethod,
  alreadyRedirected: boolean,
  location: string | string[] | undefined,
): { follow: string; refusal: null } | { follow: null; refusal: string } {
  const raw = Array.isArray(location) ? location[0] : location;
  const refuse = (why: string) => ({ follow: null, refusal: why });
  if (raw === undefined || raw.trim() === '') return refuse('a redirect without a Location; not followed');
  let to: URL;
  try {
    to = new URL(raw, base);
  } catch {
    return refuse('a redirect to a Location that is not a URL; not followed');
  }
  const where = `${to.origin}${to.pathname}`;
  if (method !== 'GET') return refuse(`redirected to ${where}; only a GET is followed, so nothing was sent there`);
  if (alreadyRedirected) return refuse(`redirected again, to ${where}; a redirect is followed once`);
  if (to.origin !== base.origin)
    return refuse(`redirected to another origin (${where}); not followed, and no credentials were sent there`);
  const rest = to.pathname.startsWith(`${prefix}/`) ? to.pathname.slice(prefix.length) : null;
  if (rest === null || !PROJECT_ID_ROUTE.test(rest))
    return refuse(`redirected to ${where}; only a redirect to a project's id (/api/v4/projects/<id>) is followed`);
  return { follow: to.pathname, refusal: null };
}

/** One header's value, the first of several, or null. */
function headerValue(v: string | string[] | undefined): string | null {
  return (Array.isArray(v) ? v[0] : v) ?? null;
}

/** Capped exponential backoff; `failures` counts from 1. */
export function backoff(policy: RetryPolicy, failures: number, random: () => number): number {
  const full = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (failures - 1));
  return Math.round(full * (1 - policy.jitter + policy.jitter * random()));
}

/** Retry-After in seconds or as an HTTP date, as a wait in ms from `nowMs`; null if absent or bad. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/** GitLab's error body flattened to one line: `message` (string or field hash), or `error` + description. */
export function gitlabMessage(body: unknown): string | null {
  if (typeof body === 'string') return body.trim().slice(0, 300) || null;
  if (typeof body !== 'object' || body === null) return null;
  const b = body as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof b['message'] === 'string') parts.push(b['message']);
  else if (typeof b['message'] === 'object' && b['message'] !== null) {
    for (const [k, v] of Object.entries(b['message'] as Record<string, unknown>))
      parts.push(`${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`);
  }
  if (typeof b['error'] === 'string')
    parts.push(typeof b['error_description'] === 'string' ? `${b['error']}: ${b['error_description']}` : b['error']);
  // Bounded: an error page or a huge validation hash must not flood logs and reports.
  return parts.length ? parts.join('; ').slice(0, 500) : null;
}

function httpError(ref: RequestRef, status: number, body: unknown, retryAfterMs: number | null): ApiError {
  const message = gitlabMessage(body);
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  switch (status) {
    case 401:
      return new ApiUnauthorizedError(ref, message, body, {
        invalidToken: b['error'] === 'invalid_token',
        description: typeof b['error_description'] === 'string' ? b['error_description'] : null,
      });
    case 403:
      return new ApiForbiddenError(ref, message, body, typeof b['scope'] === 'string' ? b['scope'] : null);
    case 404:
      return new ApiNotFoundError(ref, message, body);
    case 429:
      return new ApiRateLimitedError(ref, message, body, retryAfterMs);
    default:
      return new ApiHttpError(ref, status, message, body);
  }
}

function networkError(ref: RequestRef, cause: unknown, idempotent: boolean): ApiError {
  const code = errorCode(cause);
  const phase = code ? TIMEOUT_PHASES[code] : undefined;
  const err = phase ? new ApiTimeoutError(ref, phase, { cause }) : new ApiNetworkError(ref, code, { cause });
  if (!idempotent && !(code && NOT_SENT.has(code))) return new ApiAmbiguousError(ref, null, err.message, { cause });
  return err;
}

/** For a POST/DELETE: a 5xx leaves the effect unknown; anything else is a clear answer. */
function ambiguousIfUnknown(ref: RequestRef, err: ApiError): ApiError {
  if (err instanceof ApiHttpError && err.status >= 500)
    return new ApiAmbiguousError(ref, err.status, `HTTP ${err.status}`);
  return err;
}

function errorCode(cause: unknown): string | null {
  if (typeof cause !== 'object' || cause === null) return null;
  const c = cause as { code?: unknown; cause?: unknown };
  if (typeof c.code === 'string') return c.code;
  return c.cause ? errorCode(c.cause) : null;
}

function parseBody(text: string, contentType: string | string[] | undefined): unknown {
  if (text === '') return null;
  const ct = Array.isArray(contentType) ? contentType[0] : contentType;
  if (ct?.includes('json') || /^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

function buildQuery(query: RequestOptions['query'], drop?: Set<string>): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || drop?.has(k)) continue;
    params.append(k, String(v));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}
