/**
 * Every error the step actors throw, with stable codes. The machine records the code and the message
 * with the step in the checkpoint, and the CLI maps a failed run to exit code 1. Also: how a failed
 * POST of the HTTP client (src/api/errors.ts) is handled.
 */
import { ShardmoveError } from '../shared/errors.js';
import {
  ApiError,
  ApiForbiddenError,
  ApiHttpError,
  ApiNotFoundError,
  ApiRateLimitedError,
  ApiUnauthorizedError,
  DryRunBlockedError,
} from '../api/errors.js';

/** The token's user is not an administrator: `repository_storage` filters would be ignored silently. */
export const NOT_ADMIN = 'SHARDMOVE_PREFLIGHT_NOT_ADMIN';
/**
 * The token's user is an administrator, but admin endpoints refuse the token: the instance has Admin
 * Mode on and the token lacks the `admin_mode` scope (GitLab's `GET /user` still says `is_admin`).
 */
export const ADMIN_MODE = 'SHARDMOVE_PREFLIGHT_ADMIN_MODE';
/** The run's token cannot write (missing `api` scope) or is revoked. */
export const TOKEN_UNUSABLE = 'SHARDMOVE_PREFLIGHT_TOKEN';
/** A storage named in the plan is not configured on the instance. */
export const STORAGE_UNKNOWN = 'SHARDMOVE_STORAGE_UNKNOWN';
/** `/-/readiness` answered 404: this host is not on the instance's monitoring IP allowlist. */
export const READINESS_REFUSED = 'SHARDMOVE_STORAGE_READINESS_REFUSED';
/** A storage named in the plan fails its Gitaly health check. */
export const STORAGE_UNHEALTHY = 'SHARDMOVE_STORAGE_UNHEALTHY';
/** The merged weights break a plan rule (new repositories would keep landing on a source). */
/** Pre-flight: Prometheus rejects a throttle rule's query (its own error is quoted). */
export const PROMETHEUS_QUERY_REJECTED = 'SHARDMOVE_PREFLIGHT_PROMETHEUS_QUERY';
/** Pre-flight: the bytes to move plus capacity.keep_free exceed the destination's room. */
export const CAPACITY_EXCEEDED = 'SHARDMOVE_PREFLIGHT_CAPACITY';
export const WEIGHTS_INVALID = 'SHARDMOVE_WEIGHTS_INVALID';
/** The weights read back differ from the weights written. */
export const WEIGHTS_MISMATCH = 'SHARDMOVE_WEIGHTS_MISMATCH';

/** The run was interrupted (SIGINT/SIGTERM): state is consistent, `run` again resumes. */
export const ABORTED = 'SHARDMOVE_ABORTED';
/** A storage listing returned items that are not on the filtered storage: the filter was ignored. */
export const VERIFY_FILTER_IGNORED = 'SHARDMOVE_VERIFY_FILTER_IGNORED';
/**
 * A filtered listing returned items without `repository_storage` (CE, or a filter the instance does
 * not have): it cannot prove where anything is. Pre-flight routes such a kind to move records; this
 * is the guard for a listing that changes its answer mid-run.
 */
export const STORAGE_NOT_EXPOSED = 'SHARDMOVE_STORAGE_NOT_EXPOSED';
/** The bulk POST failed ambiguously twice and no move appeared. */
export const BULK_UNCONFIRMED = 'SHARDMOVE_BULK_UNCONFIRMED';

/** Codes of StepError: the checks of the pre-flight, storages and weights steps. */
export type StepErrorCode =
  | typeof NOT_ADMIN
  | typeof ADMIN_MODE
  | typeof READINESS_REFUSED
  | typeof TOKEN_UNUSABLE
  | typeof STORAGE_UNKNOWN
  | typeof STORAGE_UNHEALTHY
  | typeof WEIGHTS_INVALID
  | typeof PROMETHEUS_QUERY_REJECTED
  | typeof CAPACITY_EXCEEDED
  | typeof WEIGHTS_MISMATCH;

/** Codes of DrainError: the drain and verify steps. */
export type DrainErrorCode =
  typeof ABORTED | typeof VERIFY_FILTER_IGNORED | typeof STORAGE_NOT_EXPOSED | typeof BULK_UNCONFIRMED;

/** Base class of the actors' errors; match on `code`. */
export class ActorError<Code extends string = StepErrorCode | DrainErrorCode> extends ShardmoveError<Code> {}

/** A check that makes running the plan unsafe or impossible (not retried: the operator must act). */
export class StepError extends ActorError<StepErrorCode> {}

/** The drain or verify step cannot go on (interrupted, miswired, misled by the instance). */
export class DrainError extends ActorError<DrainErrorCode> {}

/** The error a drain throws when its signal is aborted. */
export function abortError(signal: AbortSignal): DrainError {
  const why = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'aborted');
  return new DrainError(ABORTED, `drain interrupted: ${why}`);
}

/**
 * How a failed POST is handled. `ambiguous`: may have been applied, reconcile before anything else.
 * `fatal`: the run cannot go on (token revoked, not admin, dry-run client); certainly not applied.
 * `throttled`: 429, not applied; try again after `retryAfterMs`. `gone`: 404. `rejected`: any other 4xx.
 */
export type PostFailure =
  | { kind: 'ambiguous' }
  | { kind: 'fatal' }
  | { kind: 'throttled'; retryAfterMs: number | null }
  | { kind: 'gone' }
  | { kind: 'rejected'; message: string };

/**
 * Classifies an error thrown by a POST, by the client's error classes. Only a 4xx answer proves the
 * request was not applied; timeouts, network errors, ambiguous outcomes, invalid responses, 5xx, 408
 * and errors that are not the client's may have been applied.
 */
export function classifyPostError(err: unknown): PostFailure {
  if (!(err instanceof ApiError)) return { kind: 'ambiguous' };
  if (err instanceof ApiUnauthorizedError || err instanceof ApiForbiddenError || err instanceof DryRunBlockedError)
    return { kind: 'fatal' };
  if (err instanceof ApiRateLimitedError) return { kind: 'throttled', retryAfterMs: err.retryAfterMs };
  if (err instanceof ApiNotFoundError) return { kind: 'gone' };
  if (err instanceof ApiHttpError && err.status < 500 && err.status !== 408)
    return { kind: 'rejected', message: err.gitlabMessage ?? err.message };
  return { kind: 'ambiguous' };
}
