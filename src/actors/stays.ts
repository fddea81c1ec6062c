/**
 * What stays on the sources at the end of a run, as the instance lists it: the storage-filtered
 * listing of every (kind, source), each item named with why it stays (quarantined, not in the
 * reviewed list, not selected, left by `move.until`). Verification of a whole drain fills it from
 * the listing it reads anyway; a reviewed list's verification (which reads only its own items)
 * lists the sources for it here, so that an item the review left out is still found where it is.
 */
import type { StayReason, StayingItem, StaysOutput } from '../machine/types.js';
import { STAYS_LISTED } from '../machine/types.js';
import type { Kind } from '../plan/types.js';
import { DrainError, VERIFY_FILTER_IGNORED, abortError } from './errors.js';
import type { ActorDeps } from './types.js';
import type { ItemLookup } from '../store/views.js';

/** Collects the staying items as a listing finds them, counted per source and reason. */
export class StaysTally {
  private readonly counts = new Map<string, number>();
  private readonly items: StayingItem[] = [];
  private total = 0;
  private readonly unlisted: string[] = [];

  add(item: StayingItem): void {
    this.total++;
    const key = `${item.source}\u0000${item.why}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    if (this.items.length < STAYS_LISTED) this.items.push(item);
  }

  /** A (kind, source) the listing could not read in full: nothing can be said to be left or not there. */
  notListed(kind: Kind, source: string, why: string): void {
    this.unlisted.push(`${kind} on ${source}: ${why}`);
  }

  result(): StaysOutput {
    const bySource = [...this.counts.entries()].map(([key, n]) => {
      const [source, why] = key.split('\u0000') as [string, StayReason];
      return { source, why, n };
    });
    bySource.sort((a, b) => a.source.localeCompare(b.source) || a.why.localeCompare(b.why));
    const items = [...this.items].sort(
      (a, b) => a.source.localeCompare(b.source) || a.kind.localeCompare(b.kind) || a.id - b.id,
    );
    return {
      listed: this.unlisted.length === 0,
      total: this.total,
      bySource,
      items,
      ...(this.unlisted.length > 0 ? { unlisted: [...this.unlisted] } : {}),
    };
  }
}

/**
 * A reviewed list's sources, listed: every item still on a source is named, quarantined ones as
 * such, the others as not in the list. An item of the list still listed on its source though its
 * move finished is returned as a problem (the list's own verification reads where each item is).
 * Throws SHARDMOVE_VERIFY_FILTER_IGNORED when the listing returns an item of another storage.
 */
export async function listWhatStays(deps: ActorDeps<ItemLookup>): Promise<{ stays: StaysOutput; problems: string[] }> {
  const { store, plan } = deps;
  const tally = new StaysTally();
  const problems: string[] = [];
  for (const source of plan.move.from) {
    for (const kind of plan.move.kinds) {
      let gaps = 0;
      try {
        for await (const page of deps.api.listItemsOnStorage(kind, source, { onUnlistable: () => gaps++ })) {
          if (deps.signal.aborted) throw abortError(deps.signal);
          for (const item of page) {
            if (item.storage !== source) {
              throw new DrainError(
                VERIFY_FILTER_IGNORED,
                `listing ${kind} on ${source} returned ${kind} ${item.id} with ${item.storage === null ? 'no repository_storage field' : `repository_storage ${item.storage}`}: ` +
                  'the instance ignored the repository_storage filter (is the token an administrator, in Admin Mode?)',
              );
            }
            const row = store.getItem(kind, item.id);
            const why: StayReason = row?.state === 'quarantined' ? 'quarantined' : 'not in the list';
            if (row && row.state !== 'quarantined' && row.state !== 'left' && row.state !== 'unselected')
              problems.push(`${kind} ${item.id} (${item.name}) of the list is still on ${source} (${row.state})`);
            else tally.add({ kind, id: item.id, path: row?.name ?? item.name, source, why });
          }
        }
      } catch (err) {
        if ((err as { code?: unknown }).code === VERIFY_FILTER_IGNORED || deps.signal.aborted) throw err;
        tally.notListed(kind, source, (err as Error).message);
        continue;
      }
      if (gaps > 0) tally.notListed(kind, source, `${gaps} part(s) of the listing could not be read`);
    }
  }
  return { stays: tally.result(), problems };
}
