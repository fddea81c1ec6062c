/**
 * What the runtime adds to a checkpoint's own rows to decide which copies left behind are live
 * (../report/copies.ts):
 * - at the end of a run, one re-check on the instance: each item with a copy listed is read once
 *   (a few at a time, within a time budget), and the answers are written to the checkpoint's log
 *   (`copies.checked`), so `status`, `report` and the metrics file say what the final report says;
 * - for a forward run whose drain was reverted, the revert's checkpoint beside it: an item the
 *   revert moved (or is moving) back onto the storage where a copy sat is served from that copy.
 */
import { existsSync } from 'node:fs';
import { ApiHttpError } from '../api/errors.js';
import type { InstanceApi } from '../api/types.js';
import type { CopyCheckData } from '../events/vocabulary.js';
import type { RunContext } from '../machine/types.js';
import type { Kind } from '../plan/types.js';
import type { Clock, Timer } from '../shared/clock.js';
import { copiesOf } from '../report/copies.js';
import type { CopyKnowledge, LaterPlace, LiveCopy } from '../report/copies.js';
import { openCheckpoint } from '../store/checkpoint.js';
import { checkpointBusyTimeout } from '../store/busy.js';
import type { CheckpointStore, ItemRow } from '../store/types.js';
import { revertCheckpointPath } from './paths.js';

/** Items read at once by the re-check. */
const PARALLEL = 4;
/** The re-check gives up on what it has not read by then: the report must not wait on a dead instance. */
export const RECHECK_BUDGET_MS = 30_000;

type Place = { storage: string } | { gone: true } | { why: string };

/**
 * Where one item lives, by the cheapest reads that tell: `GET /<kind>/:id`; for one that answers
 * 404 (hidden and pending-delete projects, project snippets not shown), its move list: 404 there
 * too means deleted, a newest move that finished gives its destination, anything else is unknown.
 */
async function placeOf(api: InstanceApi, kind: Kind, id: number): Promise<Place> {
  try {
    const item = await api.getItem(kind, id);
    if (item)
      return item.storage === null ? { why: 'the instance does not show its storage' } : { storage: item.storage };
    if (kind === 'groups') return { gone: true };
    let moves;
    try {
      moves = await api.listItemMoves(kind, id);
    } catch (err) {
      if (err instanceof ApiHttpError && err.status === 404) return { gone: true };
      throw err;
    }
    const newest = moves[0];
    if (newest && (newest.state === 'finished' || newest.state === 'cleanup failed'))
      return { storage: newest.destinationStorage };
    return { why: `GET answers 404 and its newest move did not finish (${newest?.state ?? 'no move'})` };
  } catch (err) {
    return { why: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * Reads where each item with a copy left behind lives, once, and records it (event
 * `copies.checked`). Returns what it learnt, or null when there is no copy to check.
 */
export async function recheckCopies(
  store: CheckpointStore,
  api: InstanceApi,
  opts: { destination: string | null; clock: Clock; signal: AbortSignal; budgetMs?: number },
): Promise<CopyKnowledge['checks']> {
  const view = copiesOf(store.summary(opts.clock.now(), true), { destination: opts.destination });
  if (view.left.length === 0) return null;
  const items = [...new Map(view.left.map((c) => [`${c.kind}:${c.id}`, { kind: c.kind, id: c.id }])).values()];
  const places = new Map<string, Place>();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length && !opts.signal.aborted; i = next++) {
      const it = items[i]!;
      places.set(`${it.kind}:${it.id}`, await placeOf(api, it.kind, it.id));
    }
  };
  let timer: Timer | undefined;
  const budget = new Promise<void>((resolve) => {
    timer = opts.clock.setTimeout(resolve, opts.budgetMs ?? RECHECK_BUDGET_MS);
    timer.unref();
  });
  const aborted = new Promise<void>((resolve) =>
    opts.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  try {
    await Promise.race([
      Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker)),
      budget,
      aborted,
    ]);
  } finally {
    opts.clock.clearTimeout(timer);
  }
  const late = `no answer within ${Math.round((opts.budgetMs ?? RECHECK_BUDGET_MS) / 1000)} s`;
  const checks: CopyCheckData[] = view.left.map((c) => {
    const p = places.get(`${c.kind}:${c.id}`) ?? { why: opts.signal.aborted ? 'interrupted' : late };
    return {
      kind: c.kind,
      id: c.id,
      storage: c.source,
      itemStorage: 'storage' in p ? p.storage : null,
      gone: 'gone' in p,
      why: 'why' in p ? p.why : null,
    };
  });
  const at = opts.clock.now();
  store.appendEvent('copies.checked', { checks }, at);
  return { at, checks };
}

/** The last re-check a checkpoint holds. */
export function lastCopyChecks(store: Pick<CheckpointStore, 'lastEventOf'>): CopyKnowledge['checks'] {
  const e = store.lastEventOf(['copies.checked']);
  return e ? { at: e.at, checks: e.data.checks } : null;
}

/** What a revert's row says of an item the forward run left a copy of. */
function laterOf(row: ItemRow): LaterPlace {
  const back = row.destination ?? null;
  switch (row.state) {
    case 'moved':
      return row.moveId === null
        ? { storage: back, moving: false, what: 'already back there when the revert read it' }
        : {
            storage: back,
            moving: false,
            tookOff: row.source,
            what: `the revert moved it back onto it (move ${row.moveId}): the copy became its repository`,
          };
    case 'pending':
    case 'scheduling':
    case 'in_flight':
      return {
        storage: back,
        moving: true,
        what: 'the revert is moving it back onto it: the move fetches into this copy',
      };
    case 'quarantined':
      return {
        storage: null,
        moving: false,
        what: "the revert's move back failed (quarantined); read where it lives before removing anything",
      };
    default:
      return { storage: null, moving: false, what: `the revert left it alone: ${row.lastError ?? 'not where it was'}` };
  }
}

/**
 * The copy knowledge `status` and `report` add to a checkpoint's rows: its last re-check, and, for a
 * forward run whose drain was reverted, what the revert's checkpoint beside it says. `use` runs
 * while the revert's checkpoint is open (it is read item by item) and closes it after.
 */
export function withCopyKnowledge<T>(file: string, store: CheckpointStore, use: (k: CopyKnowledge) => T): T {
  const checks = lastCopyChecks(store);
  const revertFile = revertCheckpointPath(file);
  if (store.mode() !== 'run' || !existsSync(revertFile)) return use({ checks });
  // A revert's checkpoint that cannot be read may hide items moved back onto their copies: then no
  // copy of this run is called safe to remove.
  const unreadable = (why: string) =>
    use({
      checks,
      later: () => ({
        storage: null,
        moving: false,
        what: `the revert's checkpoint ${revertFile} cannot be read (${why}): the revert may have moved it back onto this copy`,
      }),
    });
  let revert: CheckpointStore;
  try {
    revert = openCheckpoint(revertFile, { readOnly: true, busyTimeoutMs: checkpointBusyTimeout() });
  } catch (err) {
    return unreadable(err instanceof Error ? err.message : String(err));
  }
  try {
    if (revert.mode() !== 'revert') return unreadable(`it holds a ${revert.mode() ?? 'new'} checkpoint, not a revert`);
    const later = (kind: Kind, id: number): LaterPlace | undefined => {
      let row: ItemRow | null;
      try {
        row = revert.getItem(kind, id);
      } catch (err) {
        return {
          storage: null,
          moving: false,
          what: `the revert's checkpoint ${revertFile} cannot be read (${err instanceof Error ? err.message : String(err)})`,
        };
      }
      return row ? laterOf(row) : undefined;
    };
    return use({ checks, later });
  } finally {
    revert.close();
  }
}

/**
 * For a revert's report: the copies the forward run left that are live now, read from the
 * forward checkpoint (`forward`, open) and the revert's (`revertFile`) once the revert ran.
 */
export function copiesMadeLive(forward: CheckpointStore, forwardFile: string, now: number): LiveCopy[] {
  const context = (forward.loadRun()?.snapshot as { context?: Partial<RunContext> } | null)?.context;
  return withCopyKnowledge(
    forwardFile,
    forward,
    (k) => copiesOf(forward.summary(now, true), { destination: context?.destination ?? null, ...k }).live,
  );
}
