/**
 * `GET /-/sandbox/pools`, effective administrators only, like the other `/-/sandbox/`
 * routes: the object pools the sandbox holds, `[{ network, storage, bytes, members }]` by network
 * then storage, `network` the root project's id, `members` the linked project ids in id order.
 * GitLab keeps pools internal (`pool_repositories`); this is for rehearsals and tests to judge
 * placement from the sandbox's own records. Exempt from request faults (`/-/`).
 */
import type { RequestContext, Reply } from '../http/context.js';
import type { Router } from '../http/router.js';
import { listPools } from './pools.js';

/** Adds `GET /-/sandbox/pools`. */
export function register(router: Router): void {
  router.get('/-/sandbox/pools', { level: 'admin' }, showPools);
}

function showPools(ctx: RequestContext): Reply {
  return { body: listPools(ctx.state.db) };
}
