/**
 * The verify step: for every kind and source, the `repository_storage` listing must return nothing
 * but quarantined items, and every item it returns must really carry that storage. A non-admin
 * token makes GitLab drop the filter silently, so an item on another storage (or without the
 * field) means the listing proves nothing: fail loudly rather than pass on garbage.
 */
import type { Kind } from '../plan/types.js';
import { DrainError, VERIFY_FILTER_IGNORED, abortError } from './errors.js';
import type { ActorDeps } from './types.js';

export interface VerifyEntry {
  kind: Kind;
  source: string;
  /** Items the listing returned. */
  listed: number;
  /** Of those, items quarantined by the drain (expected leftovers). */
  quarantined: number;
  /** Of those, items not quarantined: the drain missed them, or they arrived since. */
  unexpected: number;
}

export interface VerifyResult {
  ok: boolean;
  perKindAndSource: VerifyEntry[];
  problems: string[];
}

/** Problems listed per (kind, source) before summarising the rest as a count. */
const MAX_LISTED_PROBLEMS = 20;

/** Lists every source for every kind and checks the leftovers. Throws SHARDMOVE_VERIFY_FILTER_IGNORED. */
export async function runVerify(deps: ActorDeps): Promise<VerifyResult> {
  const { store } = deps;
  const perKindAndSource: VerifyEntry[] = [];
  const problems: string[] = [];
  for (const source of deps.plan.move.from) {
    for (const kind of deps.plan.move.kinds) {
      const entry: VerifyEntry = { kind, source, listed: 0, quarantined: 0, unexpected: 0 };
      for await (const page of deps.api.listItemsOnStorage(kind, source)) {
        if (deps.signal.aborted) throw abortError(deps.signal);
        for (const item of page) {
          if (item.storage !== source) {
            const seen = item.storage === null ? 'no repository_storage field' : `repository_storage ${item.storage}`;
            store.appendEvent('verify.filter_ignored', { kind, source, id: item.id, storage: item.storage }, deps.clock.now());
            throw new DrainError(
              VERIFY_FILTER_IGNORED,
              `listing ${kind} on ${source} returned ${kind} ${item.id} with ${seen}: the instance ignored the ` +
                'repository_storage filter (is the token an administrator, in Admin Mode?)',
            );
          }
          entry.listed++;
          if (store.getItem(kind, item.id)?.state === 'quarantined') {
            entry.quarantined++;
            continue;
          }
          entry.unexpected++;
          if (entry.unexpected <= MAX_LISTED_PROBLEMS) problems.push(`${kind} ${item.id} (${item.name}) is still on ${source}`);
        }
      }
      if (entry.unexpected > MAX_LISTED_PROBLEMS)
        problems.push(`${kind} on ${source}: ${entry.unexpected - MAX_LISTED_PROBLEMS} more items still there`);
      perKindAndSource.push(entry);
      store.appendEvent('verify.checked', { ...entry }, deps.clock.now());
    }
  }
  const ok = problems.length === 0;
  deps.log.info({ ok, problems: problems.length }, 'verification finished');
  return { ok, perKindAndSource, problems };
}
