/**
 * The reads every concern of the InstanceApi shares: a GET whose 404 means "none", and the move
 * list's path by kind.
 */
import type { Kind } from '../plan/types.js';
import type { ApiClient } from './client.js';
import { ApiHttpError } from './errors.js';
import { singular } from './records.js';

/** A GET's body, or null when the instance answers 404. */
export async function getOrNull(c: ApiClient, path: string, query?: Record<string, unknown>): Promise<unknown> {
  try {
    return (await c.request({ method: 'GET', path, query: query as Record<string, string> })).body;
  } catch (err) {
    if (err instanceof ApiHttpError && err.status === 404) return null;
    throw err;
  }
}

/** `/project_repository_storage_moves` and its kin: the moves of one kind, every item's. */
export function moveListPath(kind: Kind): string {
  return `/${singular(kind)}_repository_storage_moves`;
}
