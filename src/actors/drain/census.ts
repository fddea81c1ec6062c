/**
 * A dry run's census of the projects on a source (for `shardmove twin`): which of them GitLab hides from its
 * default listing, and why. The enumeration lists with `include_hidden` and `include_pending_delete`
 * and so sees every project, but no field of GitLab's project entity says hidden or pending
 * deletion, and `GET /projects/:id` answers 404 for both. What tells them apart is a listing
 * without each flag: the projects it leaves out carry that flag.
 *
 * Listing the whole source twice more would cost two more enumerations (a tenth of a request per
 * project each). The census counts instead: an offset page of `GET /projects` carries `x-total`
 * when the query has at most 10,000 records, and `id_after`/`id_before` filter offset pages as
 * they filter keyset ones (docs/gitlab-behaviour.md). The source's ids, as the checkpoint knows
 * them, are cut into ranges of a few thousand; for each range one page of one project is asked
 * with both flags and one without each flag, and the difference is how many projects of the range
 * carry that flag (counted at the same moment, so a project created or moved since the enumeration
 * changes both counts alike). A range without a difference is done. One with a difference is
 * halved, each half counted again, until listing what is left costs less than counting on: then
 * that part is listed without the flag, compared with the checkpoint's ids, and the ones left out
 * are flagged. The cost is three small requests per range plus about two per flagged project per
 * halving, never more than listing the range; for a million projects with none flagged, about 340
 * requests against 20,000 for two listings.
 *
 * Read-only, repeatable: a census cut short (abort, a part of a listing or a count that answers
 * 500) is not marked done, and `twin` then says the flags of that source are unknown rather than
 * guessing. On the Community Edition, which has no hidden projects, only the pending-delete one.
 */
import type { ItemFlag } from '../../store/types.js';
import type { DrainCtx } from './context.js';
import { throwIfAborted } from './context.js';

/** Known ids per range counted at once: under the 10,000 records above which GitLab sends no total. */
const RANGE_IDS = 9_000;
/** Listing page size: a part of at most this many known ids is listed rather than halved. */
const PAGE = 100;

/** A range of ids (after, upto], with the checkpoint's known ids in it. */
interface Part {
  after: number;
  /** Null: no upper bound. */
  upto: number | null;
  known: number;
}

/** One flag's census in progress. */
interface FlagRun {
  flag: ItemFlag;
  flagged: number;
  /** A part could not be read: the census of this flag stays unfinished. */
  broken: boolean;
}

/** Runs the census of the drain's source for a finished enumeration round (projects only; others return at once). */
export async function runCensus(ctx: DrainCtx): Promise<void> {
  const { store, kind, source, deps } = ctx;
  if (kind !== 'projects') return;
  const cursor = store.getCursor(kind, source);
  if (!cursor?.done) return;
  const runs: FlagRun[] = [];
  let enterprise: boolean | null | undefined;
  for (const flag of ['hidden', 'pending_delete'] as const) {
    const known = store.shape.censusOf(kind, source, flag);
    if (known?.round === cursor.round && known.doneAt !== null) continue;
    store.shape.startCensus(kind, source, flag, cursor.round);
    if (flag === 'hidden') {
      enterprise ??= (await deps.api.version()).enterprise;
      // Only EE filters on `hidden` (docs/gitlab-behaviour.md §1.3): a CE listing hides none.
      if (enterprise === false) {
        store.shape.finishCensus(kind, source, flag, cursor.round, 0, deps.clock.now());
        continue;
      }
    }
    runs.push({ flag, flagged: 0, broken: false });
  }
  if (runs.length === 0) return;
  for (const part of partsOf(ctx)) {
    throwIfAborted(ctx);
    const all = { n: await count(ctx, part, null) };
    for (const run of runs) if (!run.broken) await settle(ctx, run, part, await flaggedIn(ctx, part, run.flag, all));
  }
  for (const run of runs) {
    if (run.broken) {
      // Items of the unread part may have been flagged: forget them; the census stays unfinished.
      store.shape.startCensus(kind, source, run.flag, cursor.round);
      deps.log.warn(
        { kind, source, flag: run.flag },
        'dry run: part of the source cannot be read without the flag; the flag stays unknown for this source',
      );
      continue;
    }
    store.shape.finishCensus(kind, source, run.flag, cursor.round, run.flagged, deps.clock.now());
    deps.log.info(
      { kind, source, flag: run.flag, flagged: run.flagged },
      'dry run: projects left out without the flag',
    );
  }
}

/** The source's known ids cut into parts of RANGE_IDS; the last one open above. */
function* partsOf(ctx: DrainCtx): Generator<Part> {
  const { store, kind, source } = ctx;
  for (let after = 0; ;) {
    const ids = store.shape.knownIds(kind, source, after, null, RANGE_IDS);
    if (ids.length < RANGE_IDS) {
      yield { after, upto: null, known: ids.length };
      return;
    }
    const upto = ids[ids.length - 1] as number;
    yield { after, upto, known: ids.length };
    after = upto;
  }
}

/**
 * The projects of `part` on the source, with both flags (`without` null) or without one; null when
 * the instance sends no total (over 10,000), undefined when the count cannot be read (HTTP 500).
 */
async function count(ctx: DrainCtx, part: Part, without: ItemFlag | null): Promise<number | null | undefined> {
  try {
    return await ctx.deps.api.countItemsOnStorage(ctx.source, {
      afterId: part.after,
      ...(part.upto !== null ? { beforeId: part.upto + 1 } : {}),
      ...(without ? { leaveOut: without } : {}),
    });
  } catch (err) {
    if (ctx.deps.signal.aborted) throw err;
    ctx.deps.log.warn({ source: ctx.source, err: (err as Error).message }, 'dry run: a count could not be read');
    return undefined;
  }
}

/**
 * How many projects of `part` carry `flag`: its projects with both flags (`all`, counted once for
 * both flags) less those without it. Null when a count has no total (over 10,000), undefined
 * when one could not be read.
 */
async function flaggedIn(
  ctx: DrainCtx,
  part: Part,
  flag: ItemFlag,
  all?: { n: number | null | undefined },
): Promise<number | null | undefined> {
  const total = all ? all.n : await count(ctx, part, null);
  if (total === undefined) return undefined;
  if (total === null) return null;
  const without = await count(ctx, part, flag);
  return without === undefined || without === null ? without : total - without;
}

/**
 * Flags `run.flag`'s projects of `part`, `flagged` of them by the counts: none to flag, or list
 * the part, or halve it and count again, whichever costs fewer requests.
 */
async function settle(ctx: DrainCtx, run: FlagRun, part: Part, flagged: number | null | undefined): Promise<void> {
  if (flagged === 0) return;
  // Halving costs about two counts per flagged project per level; listing, a page per PAGE known ids.
  const levels = Math.max(1, Math.ceil(Math.log2(Math.max(1, part.known / PAGE))));
  const pages = Math.ceil(part.known / PAGE);
  // A count that failed, or that moved under the census (more without the flag than with it): list.
  const list =
    flagged === undefined ||
    part.known <= 2 * PAGE ||
    (flagged !== null && (flagged < 0 || 2 * flagged * levels >= pages));
  if (list) {
    if (!(await listWithout(ctx, run, part))) run.broken = true;
    return;
  }
  const [low, high] = halves(ctx, part);
  const inLow = await flaggedIn(ctx, low, run.flag);
  await settle(ctx, run, low, inLow);
  // What the low half does not hold is the high half's, when both are known.
  const inHigh =
    typeof flagged === 'number' && typeof inLow === 'number' ? flagged - inLow : await flaggedIn(ctx, high, run.flag);
  await settle(ctx, run, high, inHigh);
}

/** `part` cut at its middle known id. */
function halves(ctx: DrainCtx, part: Part): [Part, Part] {
  const { store, kind, source } = ctx;
  const half = Math.floor(part.known / 2);
  const ids = store.shape.knownIds(kind, source, part.after, part.upto, half);
  const mid = ids[ids.length - 1] as number;
  return [
    { after: part.after, upto: mid, known: ids.length },
    { after: mid, upto: part.upto, known: part.known - ids.length },
  ];
}

/** Lists `part` without the flag and flags the known ids it leaves out; false when part of it could not be read. */
async function listWithout(ctx: DrainCtx, run: FlagRun, part: Part): Promise<boolean> {
  const { store, kind, source, deps } = ctx;
  let gaps = 0;
  const listed = new Set<number>();
  for await (const page of deps.api.listItemsOnStorage(kind, source, {
    afterId: part.after,
    leaveOut: run.flag,
    onUnlistable: () => gaps++,
  })) {
    let past = false;
    for (const it of page) {
      if (part.upto !== null && it.id > part.upto) past = true;
      else listed.add(it.id);
    }
    throwIfAborted(ctx);
    if (past) break;
  }
  if (gaps > 0) return false;
  const known = store.shape.knownIds(kind, source, part.after, part.upto, part.known + 1);
  const absent = known.filter((id) => !listed.has(id));
  store.shape.flagItems(kind, absent, run.flag);
  run.flagged += absent.length;
  return true;
}
