/**
 * Whether a kind's items can be listed by storage on this instance, and why not: the probe that
 * pre-flight asks once per kind.
 */
import type { Kind } from '../plan/types.js';
import type { ApiClient } from './client.js';
import { ApiHttpError } from './errors.js';
import { getOrNull, moveListPath } from './instance-read.js';
import { singular } from './records.js';
import type { KindAccess } from './types.js';

/** A storage name no instance has: a filter on it that lists anything is being ignored. */
const NO_SUCH_STORAGE = 'shardmove-probe-no-such-storage';

/** `InstanceApi.kindAccess`: listing, records only, or unsupported, with the reason. */
export async function readKindAccess(c: ApiClient, kind: Kind, enterprise: boolean | null): Promise<KindAccess> {
  if (kind === 'projects') return { mode: 'listing', reason: null };
  const movesPath = moveListPath(kind);
  if ((await getOrNull(c, movesPath, { per_page: 1 })) === null) {
    const why = kind === 'groups' ? ' (the Community Edition has no group wikis)' : '';
    return {
      mode: 'unsupported',
      reason: `the instance has no ${singular(kind)} repository storage moves: GET /api/v4${movesPath} answered 404${why}`,
    };
  }
  const path = kind === 'snippets' ? '/snippets/all' : '/groups';
  let sample: unknown[];
  try {
    const res = await c.request({ method: 'GET', path, query: { per_page: 1 } });
    sample = Array.isArray(res.body) ? res.body : [];
  } catch (err) {
    // Before 16.3 `/snippets/all` is taken as snippet id "all" (400 "id is invalid").
    if (err instanceof ApiHttpError && (err.status === 400 || err.status === 404)) {
      return {
        mode: 'records',
        reason: `GET /api/v4${path} is not available (HTTP ${err.status}; /snippets/all exists from GitLab 16.3), so ${kind} cannot be listed by storage`,
      };
    }
    throw err;
  }
  const first = sample[0];
  if (first === undefined) {
    if (enterprise === false)
      return {
        mode: 'records',
        reason: `the instance is the Community Edition, which does not expose the repository storage of ${kind}`,
      };
    return { mode: 'listing', reason: null };
  }
  // The field's presence decides (a group without a wiki repository shows it as null).
  const shown = typeof first === 'object' && first !== null && 'repository_storage' in first;
  // EE shows a group's storage only with the group_wikis licence feature (ee/lib/ee/api/entities/group.rb).
  // Without it (Free) group wikis may still exist (a lapsed licence keeps them), and the move API
  // and its bulk service move them with no licence check: never assume there are none.
  if (kind === 'groups' && !shown && enterprise === true) {
    return {
      mode: 'records',
      reason:
        'EE without the group_wikis licence (Free): GET /api/v4/groups shows no repository_storage, but group wikis a lapsed licence left are still there and the group move API moves them',
    };
  }
  if (!shown) {
    return {
      mode: 'records',
      reason: `GET /api/v4${path} shows no repository_storage field for ${kind} (Community Edition, or a tier that does not expose it)`,
    };
  }
  // A filter on a storage that cannot exist must list nothing; anything listed means it is ignored.
  const probe = await c.request({
    method: 'GET',
    path,
    query: { repository_storage: NO_SUCH_STORAGE, per_page: 1 },
  });
  if (Array.isArray(probe.body) && probe.body.length > 0) {
    return {
      mode: 'records',
      reason: `GET /api/v4${path} ignores the repository_storage filter on this instance${kind === 'groups' ? ' (GitLab declares the group filter from 16.3 and ignores it before, listing every group)' : ''}, so a listing cannot tell what is on a storage`,
    };
  }
  return { mode: 'listing', reason: null };
}
