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

/** How a failed POST is handled: `ambiguous` may have been applied, the others certainly were not. */
export type PostFailure = { kind: 'ambiguous' } | { kind: 'gone' } | { kind: 'rejected'; message: string };

/**
 * Classifies an error thrown by a POST. Only an HTTP 4xx answer proves the request was not applied;
 * timeouts, network errors, 5xx and unknown errors may have been applied and must be reconciled.
 */
export function classifyPostError(err: unknown): PostFailure {
  const e = err as { code?: unknown; status?: unknown; message?: unknown };
  const status = typeof e?.status === 'number' ? e.status : null;
  if (e?.code === 'SHARDMOVE_API_AMBIGUOUS' || status === null || status >= 500) return { kind: 'ambiguous' };
  if (status === 404) return { kind: 'gone' };
  if (status === 408 || status === 429) return { kind: 'ambiguous' };
  return { kind: 'rejected', message: String(e.message ?? `HTTP ${status}`) };
}

/** The error a drain throws when its signal is aborted. */
export function abortError(signal: AbortSignal): DrainError {
  const why = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'aborted');
  return new DrainError(ABORTED, `drain interrupted: ${why}`);
}
