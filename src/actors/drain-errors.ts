/** Errors of the drain and verify steps, matched by `code`. */

export class DrainError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'DrainError';
  }
}

/** The run was interrupted (SIGINT/SIGTERM): state is consistent, `run` again resumes. */
export const ABORTED = 'SHARDMOVE_ABORTED';
/** The store handed to the drain has no item-level part (runtime wiring bug). */
export const STORE_NO_ITEMS = 'SHARDMOVE_STORE_NO_ITEMS';
/** A storage listing returned items that are not on the filtered storage: the filter was ignored. */
export const VERIFY_FILTER_IGNORED = 'SHARDMOVE_VERIFY_FILTER_IGNORED';
/** The bulk POST failed ambiguously twice and no move appeared. */
export const BULK_UNCONFIRMED = 'SHARDMOVE_BULK_UNCONFIRMED';

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

const AMBIGUOUS_CODES = new Set(['SHARDMOVE_API_AMBIGUOUS', 'SHARDMOVE_API_TIMEOUT', 'SHARDMOVE_API_NETWORK', 'SHARDMOVE_API_INVALID_RESPONSE']);
const FATAL_CODES = new Set(['SHARDMOVE_API_UNAUTHORIZED', 'SHARDMOVE_API_FORBIDDEN', 'SHARDMOVE_DRY_RUN_BLOCKED']);

/**
 * Classifies an error thrown by a POST (codes of src/api/errors.ts). Only a 4xx answer proves the
 * request was not applied; timeouts, network errors, 5xx and unknown errors may have been applied.
 */
export function classifyPostError(err: unknown): PostFailure {
  const e = (err ?? {}) as { code?: unknown; status?: unknown; message?: unknown; gitlabMessage?: unknown; retryAfterMs?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const status = typeof e.status === 'number' ? e.status : null;
  if (AMBIGUOUS_CODES.has(code)) return { kind: 'ambiguous' };
  if (FATAL_CODES.has(code) || status === 401 || status === 403) return { kind: 'fatal' };
  if (status === null || status >= 500 || status === 408) return { kind: 'ambiguous' };
  if (status === 429) return { kind: 'throttled', retryAfterMs: typeof e.retryAfterMs === 'number' ? e.retryAfterMs : null };
  if (status === 404) return { kind: 'gone' };
  const gitlab = typeof e.gitlabMessage === 'string' ? e.gitlabMessage : null;
  return { kind: 'rejected', message: gitlab ?? String(e.message ?? `HTTP ${status}`) };
}

/** The error a drain throws when its signal is aborted. */
export function abortError(signal: AbortSignal): DrainError {
  const why = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'aborted');
  return new DrainError(ABORTED, `drain interrupted: ${why}`);
}
