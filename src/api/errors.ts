/**
 * Every error the HTTP client throws, with stable codes (match on `code`, not on the class or the
 * message). `retryable` says whether repeating the same request could succeed; the orchestrator
 * decides whether it does. Messages carry method, path (query stripped), status and GitLab's own
 * message, never a header or a token value.
 */
import { formatPlanDuration } from '../time/durations.js';
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';

/** The HTTP client's stable codes, matched on across modules, with their meanings for operators (docs/errors.md). */
export const API_CODES = defineErrorCodes('api', {
  SHARDMOVE_API_TIMEOUT:
    'The instance sent no response headers or body within instance.timeout, after the retries (a write that timed out is SHARDMOVE_API_AMBIGUOUS instead).',
  SHARDMOVE_API_NETWORK:
    "The connection to the instance was refused, reset or closed (the OS's or undici's code is named), after the retries.",
  SHARDMOVE_API_AMBIGUOUS:
    'A POST or DELETE failed in a way that leaves its effect unknown (timeout, network error or 5xx after sending); the instance is re-read before it is repeated.',
  SHARDMOVE_API_HTTP:
    "The instance answered with an HTTP error that has no code of its own; the message quotes the status and GitLab's own message.",
  SHARDMOVE_API_UNAUTHORIZED:
    'The instance answered 401: the token is expired, revoked or not accepted, or its OAuth refresh failed; give the run a new token and run the same command again.',
  SHARDMOVE_API_FORBIDDEN:
    "The instance answered 403: the token's user is not an administrator, the token lacks a scope, or sudo was refused.",
  SHARDMOVE_API_NOT_FOUND:
    'The instance answered 404: the item, move or route does not exist, or the token cannot see it.',
  SHARDMOVE_API_RATE_LIMITED:
    'The instance answered 429 after the retries ran out (at once for a write, which a 429 did not perform); its Retry-After is honoured.',
  SHARDMOVE_API_INVALID_RESPONSE:
    'A 2xx answer whose body is not what the endpoint documents (not JSON, the wrong shape): a proxy in the way, or not a GitLab instance.',
  SHARDMOVE_DRY_RUN_BLOCKED:
    'A dry run was about to send a request that writes; it was refused before anything was sent (a dry run changes nothing).',
  SHARDMOVE_INSTANCE_OUTAGE:
    'The instance did not answer (network errors, timeouts, 502/503/504) for instance.outage_wait while the run held for it (exit 7); moves already posted go on on GitLab: run the same command again once it answers.',
});

/** Stable codes of the HTTP client's errors. */
export type ApiErrorCode = keyof typeof API_CODES;

/** The instance did not answer for instance.outage_wait (exit 7). */
export const INSTANCE_OUTAGE = API_CODES.SHARDMOVE_INSTANCE_OUTAGE;

/** The Prometheus client's codes (prometheus.ts), with their meanings for operators (docs/errors.md). */
export const PROMETHEUS_CODES = defineErrorCodes('api', {
  SHARDMOVE_PROMETHEUS_REJECTED:
    "Prometheus refused a throttle rule's or capacity query (bad_data, execution), or it answers neither a scalar nor an instant vector: the plan's query is wrong.",
  SHARDMOVE_PROMETHEUS_UNREACHABLE:
    'Prometheus did not answer, or answered with a server error; during a run, prometheus.on_error says whether the run pauses or ignores the rules it could not read.',
  SHARDMOVE_PROMETHEUS_INVALID_RESPONSE: 'Prometheus answered 2xx with a body that is not a query result.',
});

/** Stable codes of the Prometheus client's errors. */
export type PrometheusErrorCode = keyof typeof PROMETHEUS_CODES;

/** Where a failed request went: enough to find it in the event log, nothing secret. */
export interface RequestRef {
  method: string;
  /** Path without the query string. */
  path: string;
}

/** Base class of all client errors. */
export class ApiError extends ShardmoveError<ApiErrorCode> {
  readonly retryable: boolean;
  readonly method: string;
  readonly path: string;

  constructor(code: ApiErrorCode, message: string, ref: RequestRef, retryable: boolean, options?: { cause?: unknown }) {
    super(code, message, options);
    this.retryable = retryable;
    this.method = ref.method;
    this.path = ref.path;
  }
}

/** No response headers or body within the timeout. The request may have reached the server. */
export class ApiTimeoutError extends ApiError {
  constructor(ref: RequestRef, phase: string, options?: { cause?: unknown }) {
    super('SHARDMOVE_API_TIMEOUT', `${ref.method} ${ref.path}: ${phase} timeout`, ref, true, options);
  }
}

/** Connection refused, reset or closed. */
export class ApiNetworkError extends ApiError {
  /** Undici's or the OS's error code (ECONNRESET, UND_ERR_SOCKET ...), if any. */
  readonly causeCode: string | null;
  constructor(ref: RequestRef, causeCode: string | null, options?: { cause?: unknown }) {
    super(
      'SHARDMOVE_API_NETWORK',
      `${ref.method} ${ref.path}: network error${causeCode ? ` (${causeCode})` : ''}`,
      ref,
      true,
      options,
    );
    this.causeCode = causeCode;
  }
}

/**
 * A mutating request (POST/DELETE) failed in a way that leaves its effect unknown: network error or
 * timeout after it may have been sent, or a 5xx. Never re-send it blindly: re-read the server's
 * state (the item's moves, its storage) first. Not `retryable` for that reason.
 */
export class ApiAmbiguousError extends ApiError {
  /** HTTP status when there was one (5xx), else null. */
  readonly status: number | null;
  constructor(ref: RequestRef, status: number | null, detail: string, options?: { cause?: unknown }) {
    super(
      'SHARDMOVE_API_AMBIGUOUS',
      `${ref.method} ${ref.path}: outcome unknown (${detail}); re-read the server's state before repeating`,
      ref,
      false,
      options,
    );
    this.status = status;
  }
}

/** Any other non-2xx answer; `gitlabMessage` is GitLab's `message`/`error` body, flattened. */
export class ApiHttpError extends ApiError {
  readonly status: number;
  readonly gitlabMessage: string | null;
  /** The parsed JSON body, when there was one (for callers that need GitLab's error hash). */
  readonly body: unknown;
  constructor(
    ref: RequestRef,
    status: number,
    gitlabMessage: string | null,
    body: unknown,
    code: ApiErrorCode = 'SHARDMOVE_API_HTTP',
    retryable = status >= 500,
  ) {
    super(
      code,
      `${ref.method} ${ref.path}: HTTP ${status}${gitlabMessage ? `: ${gitlabMessage}` : ''}`,
      ref,
      retryable,
    );
    this.status = status;
    this.gitlabMessage = gitlabMessage;
    this.body = body;
  }
}

/** 401. `invalidToken` when GitLab said `invalid_token` (expired or revoked token, see `description`). */
export class ApiUnauthorizedError extends ApiHttpError {
  readonly invalidToken: boolean;
  /** GitLab's `error_description` ("Token is expired. ...", "Token was revoked. ...") or null. */
  readonly description: string | null;
  /** What GitLab's description says about the token, for operator messages. */
  readonly tokenProblem: 'expired' | 'revoked' | 'other' | null;
  /** True when the OAuth refresh that should have fixed the 401 failed itself. */
  readonly refreshFailed: boolean;
  constructor(
    ref: RequestRef,
    gitlabMessage: string | null,
    body: unknown,
    details: { invalidToken: boolean; description: string | null; refreshFailed?: boolean },
  ) {
    super(ref, 401, gitlabMessage, body, 'SHARDMOVE_API_UNAUTHORIZED', false);
    this.invalidToken = details.invalidToken;
    this.description = details.description;
    const d = details.description ?? '';
    this.tokenProblem = !details.invalidToken
      ? null
      : /expired/i.test(d)
        ? 'expired'
        : /revoked/i.test(d)
          ? 'revoked'
          : 'other';
    this.refreshFailed = details.refreshFailed ?? false;
    // The operator's next step, named without the token: a refresh failure already says its own.
    if (!this.refreshFailed) {
      const what =
        this.tokenProblem === 'revoked'
          ? 'the token was revoked'
          : this.tokenProblem === 'expired'
            ? 'the token has expired'
            : 'the token was not accepted';
      this.message = `${this.message} (${what}: give the run a new token through its environment variable or token file, then run the same command again)`;
    }
  }
}

/** 403: not an admin, insufficient scope, sudo refused. */
export class ApiForbiddenError extends ApiHttpError {
  /** The `scope` GitLab asked for on `insufficient_scope`, else null. */
  readonly scope: string | null;
  constructor(ref: RequestRef, gitlabMessage: string | null, body: unknown, scope: string | null) {
    super(ref, 403, gitlabMessage, body, 'SHARDMOVE_API_FORBIDDEN', false);
    this.scope = scope;
  }
}

/** 404: the item, move or route does not exist (or is invisible to the caller). */
export class ApiNotFoundError extends ApiHttpError {
  constructor(ref: RequestRef, gitlabMessage: string | null, body: unknown) {
    super(ref, 404, gitlabMessage, body, 'SHARDMOVE_API_NOT_FOUND', false);
  }
}

/** 429 after the retries ran out (or at once for POST/DELETE, which a 429 did not perform). */
export class ApiRateLimitedError extends ApiHttpError {
  /** What Retry-After asked for, in ms, or null. */
  readonly retryAfterMs: number | null;
  constructor(ref: RequestRef, gitlabMessage: string | null, body: unknown, retryAfterMs: number | null) {
    super(ref, 429, gitlabMessage, body, 'SHARDMOVE_API_RATE_LIMITED', true);
    this.retryAfterMs = retryAfterMs;
  }
}

/** A 2xx whose body is not what the endpoint documents (not JSON, wrong shape). */
export class ApiInvalidResponseError extends ApiError {
  constructor(ref: RequestRef, detail: string) {
    super('SHARDMOVE_API_INVALID_RESPONSE', `${ref.method} ${ref.path}: unexpected response (${detail})`, ref, false);
  }
}

/** Dry run: a mutating request was refused before anything was sent. */
export class DryRunBlockedError extends ApiError {
  constructor(ref: RequestRef) {
    super(
      'SHARDMOVE_DRY_RUN_BLOCKED',
      `${ref.method} ${ref.path}: blocked, the client is read-only (dry run)`,
      ref,
      false,
    );
  }
}

/** An outage as the run tells it: since when nothing answered, and the last cause seen. */
export interface OutageState {
  /** ms since epoch of the first failure that no answer followed. */
  since: number;
  /** `ECONNREFUSED`, `ECONNRESET`, `timeout`, `HTTP 503` ... */
  cause: string;
  /** How often the instance is asked again (ms). */
  retryMs: number;
  /** ms since epoch when a waiting request gives up; null while nothing waits (a quiet run). */
  deadline: number | null;
}

/** `23:41:02 UTC`: when an outage began, as the operator reads it beside a log. */
export function outageClock(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)} UTC`;
}

/** The instance did not answer for instance.outage_wait while requests waited for it (./outage.ts). */
export class InstanceOutageError extends ShardmoveError<ApiErrorCode> {
  /** ms since epoch of the first failure no answer followed. */
  readonly since: number;
  /** The last failure seen (ECONNREFUSED, timeout, HTTP 503 ...). */
  readonly lastCause: string;
  constructor(state: OutageState, waitMs: number) {
    super(
      'SHARDMOVE_INSTANCE_OUTAGE',
      `the instance has not answered since ${outageClock(state.since)} (${state.cause}), and instance.outage_wait ` +
        `(${formatPlanDuration(waitMs)}) ran out. Moves already posted go on on GitLab (their repositories ` +
        'read-only until they end): once the instance answers, run the same command again; it follows them and goes on',
    );
    this.since = state.since;
    this.lastCause = state.cause;
  }
}

/** True for any error this module throws. */
export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}
