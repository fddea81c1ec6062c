/**
 * The verify step: for every kind and source, the `repository_storage` listing must return nothing
 * but quarantined items, and every item it returns must really carry that storage. A non-admin
 * token makes GitLab drop the filter silently, so an item on another storage (or without the
 * field) means the listing proves nothing: fail loudly rather than pass on garbage. A listing with
 * unreadable parts, or one that misses items the checkpoint knows are still on the source, never
 * passes as "empty": each is a problem.
 */
import type { UnlistableGap } from '../api/types.js';
import type { AuditEventMap } from '../events/vocabulary.js';
import type { VerifyInput } from '../machine/types.js';
import type { Kind } from '../plan/types.js';
import { DrainError, VERIFY_FILTER_IGNORED, abortError } from './errors.js';
import { chooseItems, selectionOf } from './select.js';
import { unconfirmedByRecords } from './drain/records.js';
import type { ActorDeps } from './types.js';
import { verifyContent } from './verify-content.js';
import { StaysTally } from './stays.js';
import type { ContentVerifyOutput, StaysOutput } from '../machine/types.js';
import type { VerifyStore } from '../store/views.js';

/**
 * What verification found for one (kind, source), recorded as its `verify.checked` event, whose type
 * it is (declared once, in events/vocabulary.ts). `listed`: the items the listing returned; of those,
 * `quarantined` (the drain's expected leftovers), `unexpected` (not quarantined: the drain missed them,
 * or they arrived since) and `kept` (a partial drain left them on the source as its plan asked, never
 * placed, or `move.select` did not choose them: expected, not a problem). `unlistable`: parts of the listing that could not be read (pages
 * answering 500 even one item at a time). `unlisted`: items the checkpoint knows on the source (not
 * moved, left or quarantined) that the listing did not show. `by`: how the entry was verified,
 * `listing` (the storage-filtered listing), or `records` when the instance does not expose the kind's
 * storage and the bulk move's records are the evidence (`listed` is then 0, and `moved` counts the
 * items whose moves finished).
 */
export type VerifyEntry = AuditEventMap['verify.checked'];

export interface VerifyResult {
  ok: boolean;
  perKindAndSource: VerifyEntry[];
  problems: string[];
  content?: ContentVerifyOutput;
  stays: StaysOutput;
}

/** Problems listed per (kind, source) before summarising the rest as a count. */
const MAX_LISTED_PROBLEMS = 20;

/**
 * Lists every source for every kind and checks the leftovers. Throws SHARDMOVE_VERIFY_FILTER_IGNORED.
 * `input` (from the machine) names the kinds the run drains and how each is found; without it
 * (older callers) every kind of the plan is verified by listing.
 */
export async function runVerify(deps: ActorDeps<VerifyStore>, input?: VerifyInput): Promise<VerifyResult> {
  const { store } = deps;
  const perKindAndSource: VerifyEntry[] = [];
  const problems: string[] = [];
  const kinds = input?.kinds ?? deps.plan.move.kinds;
  const stays = new StaysTally();
  for (const source of deps.plan.move.from) {
    for (const kind of kinds) {
      if (input?.access[kind] === 'records') {
        const entry = verifyByRecords(store, kind, source, problems);
        stays.notListed(kind, source, `the instance does not expose the storage of ${kind}: verified by move records`);
        perKindAndSource.push(entry);
        store.appendEvent('verify.checked', { ...entry }, deps.clock.now());
        continue;
      }
      const entry: VerifyEntry = {
        kind,
        source,
        listed: 0,
        quarantined: 0,
        unexpected: 0,
        unlistable: 0,
        unlisted: 0,
        by: 'listing',
      };
      const bounded = deps.plan.move.until !== undefined && store.getBound(source) !== null;
      const selection = selectionOf(deps.plan);
      if (bounded || selection) entry.kept = 0;
      const gaps: UnlistableGap[] = [];
      const listedIds = new Set<number>();
      for await (const page of deps.api.listItemsOnStorage(kind, source, { onUnlistable: (g) => gaps.push(g) })) {
        if (deps.signal.aborted) throw abortError(deps.signal);
        // Not selected (move.select): stays, as planned; an item listed since the drain is judged the same way.
        const chosen = selection ? await chooseItems(deps, selection, kind, page) : null;
        for (const item of page) {
          if (item.storage !== source) {
            const seen = item.storage === null ? 'no repository_storage field' : `repository_storage ${item.storage}`;
            store.appendEvent(
              'verify.filter_ignored',
              { kind, source, id: item.id, storage: item.storage },
              deps.clock.now(),
            );
            throw new DrainError(
              VERIFY_FILTER_IGNORED,
              `listing ${kind} on ${source} returned ${kind} ${item.id} with ${seen}: the instance ignored the ` +
                'repository_storage filter (is the token an administrator, in Admin Mode?)',
            );
          }
          entry.listed++;
          listedIds.add(item.id);
          const row = store.getItem(kind, item.id);
          const staying = { kind, id: item.id, path: row?.name ?? item.name, source };
          if (row?.state === 'quarantined') {
            entry.quarantined++;
            stays.add({ ...staying, why: 'quarantined' });
            continue;
          }
          if (row?.state === 'unselected' || (chosen && !row && !chosen.get(item.id))) {
            entry.kept = (entry.kept ?? 0) + 1;
            stays.add({ ...staying, why: 'not selected' });
            continue;
          }
          // Judged again on what the listing shows now: an item transferred out of the selection
          // after its row was made, and never moved by the run, stays as the plan now asks.
          if (chosen && row && row.state === 'pending' && !chosen.get(item.id)) {
            const now = kind === 'snippets' ? 'its project or author' : item.name;
            store.leaveSelection(kind, item.id, `left the selection: now ${now}, which move.select does not choose`);
            entry.kept = (entry.kept ?? 0) + 1;
            stays.add({ ...staying, why: 'not selected' });
            continue;
          }
          // Left by the bound: an item never placed (or one the checkpoint never saw, listed after it).
          if (bounded && (!row || (row.state === 'pending' && !row.destination))) {
            entry.kept = (entry.kept ?? 0) + 1;
            stays.add({ ...staying, why: 'move.until' });
            continue;
          }
          entry.unexpected++;
          if (entry.unexpected <= MAX_LISTED_PROBLEMS)
            problems.push(`${kind} ${item.id} (${item.name}) is still on ${source}`);
        }
      }
      // A listing that could not be read in full proves nothing about what it did not show.
      entry.unlistable = gaps.length;
      if (gaps.length > 0) stays.notListed(kind, source, `${gaps.length} part(s) of the listing could not be read`);
      for (const g of gaps.slice(0, MAX_LISTED_PROBLEMS)) {
        const what =
          g.id !== null
            ? `${kind} ${g.id}`
            : `an item between ${kind} ${g.afterId ?? '(start)'} and ${g.beforeId ?? '(end)'}`;
        problems.push(
          `${kind} on ${source} could not be fully listed: ${what} breaks the listing (${g.reason}); the storage is not proven empty`,
        );
      }
      // Items the drain knows to be on the source but the listing did not show (hidden or
      // pending-delete projects on an instance that does not list them, unreadable pages): still there.
      for (const state of ['pending', 'scheduling', 'in_flight'] as const) {
        for (const row of store.itemsInState(kind, source, state, 10_000)) {
          if (listedIds.has(row.id)) continue;
          if (bounded && state === 'pending' && !row.destination) continue;
          entry.unlisted++;
          if (entry.unlisted <= MAX_LISTED_PROBLEMS) {
            problems.push(
              `${kind} ${row.id} (${row.name}) is still on ${source} (${state}) but the listing does not show it (hidden, pending deletion or unlistable)`,
            );
          }
        }
      }
      if (entry.unexpected > MAX_LISTED_PROBLEMS)
        problems.push(`${kind} on ${source}: ${entry.unexpected - MAX_LISTED_PROBLEMS} more items still there`);
      perKindAndSource.push(entry);
      store.appendEvent('verify.checked', { ...entry }, deps.clock.now());
    }
  }
  // The content of the sampled moved projects (verify.content), compared last: after every listing.
  const content = await verifyContent(deps);
  if (content) problems.push(...content.problems);
  const ok = problems.length === 0;
  deps.log.info({ ok, problems: problems.length }, 'verification finished');
  return { ok, perKindAndSource, problems, stays: stays.result(), ...(content ? { content: content.output } : {}) };
}

/**
 * A kind whose storage the instance does not expose: the drain's bulk moves are the evidence. It
 * passes when a bulk move for the source was seen to create no move except for quarantined items
 * (the instance found nothing else there) and no item the records named is still pending or in
 * flight. Items a bulk job skips without a record (already read-only, say) cannot be seen this way;
 * pre-flight warns about moves already in flight on the sources.
 */
function verifyByRecords(store: VerifyStore, kind: Kind, source: string, problems: string[]): VerifyEntry {
  const c = store.countStates(kind, source);
  const open = c.pending + c.scheduling + c.in_flight;
  const entry: VerifyEntry = {
    kind,
    source,
    listed: 0,
    quarantined: c.quarantined,
    unexpected: 0,
    unlistable: 0,
    unlisted: open,
    by: 'records',
    moved: c.moved + c.left,
  };
  if (!store.getBulk(kind, source)?.confirmedAt) problems.push(unconfirmedByRecords(kind, source));
  for (const state of ['pending', 'scheduling', 'in_flight'] as const) {
    for (const row of store.itemsInState(kind, source, state, MAX_LISTED_PROBLEMS)) {
      problems.push(`${kind} ${row.id} (${row.name}) is still on ${source} (${state}, known from the move records)`);
    }
  }
  return entry;
}
