/**
 * Every error the step actors throw, with stable codes. The machine records the code and the message
 * with the step in the checkpoint, and the CLI maps a failed run to exit code 1. Also: how a failed
 * POST of the HTTP client (src/api/errors.ts) is handled.
 */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';
import {
  ApiError,
  ApiForbiddenError,
  ApiHttpError,
  ApiNotFoundError,
  ApiRateLimitedError,
  ApiUnauthorizedError,
  DryRunBlockedError,
} from '../api/errors.js';

/** The step actors' error codes, with their meanings for operators (docs/errors.md). */
export const ACTOR_CODES = defineErrorCodes('actors', {
  SHARDMOVE_PREFLIGHT_NOT_ADMIN:
    "Pre-flight: the token's user is not an administrator, so the instance would silently ignore the repository_storage filters; use an administrator's token.",
  SHARDMOVE_PREFLIGHT_ADMIN_MODE:
    "Pre-flight: the token's user is an administrator, but the instance has Admin Mode on and the token lacks the admin_mode scope (GET /user still says is_admin).",
  SHARDMOVE_PREFLIGHT_TOKEN:
    "Pre-flight: the run's token is revoked, or lacks a scope the moves need (api, or the one the admin API asks for).",
  SHARDMOVE_STORAGE_UNKNOWN:
    'A storage the plan names is not configured on the instance, or its readiness check lists no Gitaly storage at all.',
  SHARDMOVE_STORAGE_READINESS_REFUSED:
    "GET /-/readiness answered 404: this host is not on the instance's monitoring IP allowlist (gitlab_rails['monitoring_whitelist']).",
  SHARDMOVE_STORAGE_UNHEALTHY: 'A storage the plan names fails its Gitaly health check; the message names it and why.',
  SHARDMOVE_PREFLIGHT_PROMETHEUS_QUERY:
    "Pre-flight: Prometheus rejects a throttle rule's query (its own error is quoted), or the query answers neither a scalar nor an instant vector.",
  SHARDMOVE_PREFLIGHT_CAPACITY:
    "Pre-flight: what is left to move plus capacity.keep_free exceeds a destination's room, or that room cannot be read. Nothing was written.",
  SHARDMOVE_PREFLIGHT_FOREIGN_MOVES:
    "Pre-flight: moves this checkpoint did not schedule are in flight on the plan's sources (another drain of the same storages, under another --state or on another host, or a move made by hand); the refusal names how many per kind and storage, since when, and a few by id. Nothing was written (exit 4). Wait for them, stop that run, or pass `run --accept-foreign-moves` if they are known.",
  SHARDMOVE_SELECT_UNKNOWN:
    'Pre-flight: a name in move.select (namespaces, projects, exclude or its file) is not on the instance, or is not what its list takes (a namespace under projects); each is named at its file:line:col, or file:line for the select file. Nothing was written (exit 2).',
  SHARDMOVE_SELECT_UNLISTABLE:
    'Pre-flight: move.select chooses items, but the instance does not expose the storage of a kind the plan moves, which then moves by one bulk move per storage and cannot choose: drop the kind from move.kinds. Nothing was written (exit 2).',
  SHARDMOVE_WEIGHTS_INVALID:
    'The merged storage weights break a plan rule (new repositories would keep landing on a source); nothing was written.',
  SHARDMOVE_WEIGHTS_MISMATCH:
    'The storage weights the instance reports after shardmove wrote them (a run, a revert, `weights restore`) differ from those written.',
  SHARDMOVE_WEIGHTS_CHANGED:
    "`revert` or `weights restore` would write the weights of before the run over weights changed since the run left them; the refusal shows each storage's values. Pass --overwrite-weights if that is intended. Nothing was written.",
  SHARDMOVE_ABORTED:
    'The drain or verification was interrupted (SIGINT/SIGTERM); the checkpoint is consistent and the run ends interrupted (130): `run` again resumes.',
  SHARDMOVE_VERIFY_FILTER_IGNORED:
    'A storage listing returned items that are not on the filtered storage: the instance ignored the repository_storage filter, so nothing it lists can be trusted.',
  SHARDMOVE_STORAGE_NOT_EXPOSED:
    'A filtered listing returned items without repository_storage (CE, or a filter the instance lacks) in the middle of a run: it cannot prove where anything is.',
  SHARDMOVE_BULK_UNCONFIRMED:
    'A bulk move POST failed ambiguously twice and no move appeared on the instance: whether it was applied is unknown.',
  SHARDMOVE_FREE_UNREADABLE:
    "A storage's capacity query answers no sample, or a sample that is no number of free bytes (negative, infinite, NaN). Pre-flight refuses with SHARDMOVE_PREFLIGHT_CAPACITY; during a drain, placement places by weights and a partial drain schedules nothing new from that source.",
});

// One constant per code, the same lines as in every module's errors.ts (which is why they read as
// repeated): the short names other modules match a code by; what each code means is in the table.
export const NOT_ADMIN = ACTOR_CODES.SHARDMOVE_PREFLIGHT_NOT_ADMIN;
export const ADMIN_MODE = ACTOR_CODES.SHARDMOVE_PREFLIGHT_ADMIN_MODE;
export const TOKEN_UNUSABLE = ACTOR_CODES.SHARDMOVE_PREFLIGHT_TOKEN;
export const STORAGE_UNKNOWN = ACTOR_CODES.SHARDMOVE_STORAGE_UNKNOWN;
export const READINESS_REFUSED = ACTOR_CODES.SHARDMOVE_STORAGE_READINESS_REFUSED;
export const STORAGE_UNHEALTHY = ACTOR_CODES.SHARDMOVE_STORAGE_UNHEALTHY;
export const PROMETHEUS_QUERY_REJECTED = ACTOR_CODES.SHARDMOVE_PREFLIGHT_PROMETHEUS_QUERY;
export const CAPACITY_EXCEEDED = ACTOR_CODES.SHARDMOVE_PREFLIGHT_CAPACITY;
/** A `move.select` name the instance does not know (exit 2, like a plan problem). */
export const SELECT_UNKNOWN = ACTOR_CODES.SHARDMOVE_SELECT_UNKNOWN;
export const FOREIGN_MOVES = ACTOR_CODES.SHARDMOVE_PREFLIGHT_FOREIGN_MOVES;
/** `move.select` with a kind moved by move records, which cannot choose (exit 2). */
export const SELECT_UNLISTABLE = ACTOR_CODES.SHARDMOVE_SELECT_UNLISTABLE;
export const WEIGHTS_INVALID = ACTOR_CODES.SHARDMOVE_WEIGHTS_INVALID;
export const WEIGHTS_MISMATCH = ACTOR_CODES.SHARDMOVE_WEIGHTS_MISMATCH;
/**
 * `revert` and `weights restore` refuse to write the weights of before a run over weights changed
 * since the run left them, unless `--overwrite-weights` (exit 4).
 */
export const WEIGHTS_CHANGED = ACTOR_CODES.SHARDMOVE_WEIGHTS_CHANGED;
export const ABORTED = ACTOR_CODES.SHARDMOVE_ABORTED;
export const VERIFY_FILTER_IGNORED = ACTOR_CODES.SHARDMOVE_VERIFY_FILTER_IGNORED;
/**
 * Pre-flight routes a kind whose listing does not expose `repository_storage` to move records; this
 * is the guard for a listing that changes its answer mid-run.
 */
export const STORAGE_NOT_EXPOSED = ACTOR_CODES.SHARDMOVE_STORAGE_NOT_EXPOSED;
export const BULK_UNCONFIRMED = ACTOR_CODES.SHARDMOVE_BULK_UNCONFIRMED;
/** A capacity query whose answer is no free space (UnreadableFreeError); callers turn it into a decision. */
export const FREE_UNREADABLE = ACTOR_CODES.SHARDMOVE_FREE_UNREADABLE;

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
  | typeof WEIGHTS_MISMATCH
  | typeof WEIGHTS_CHANGED
  | typeof SELECT_UNKNOWN
  | typeof SELECT_UNLISTABLE
  | typeof FOREIGN_MOVES;

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
