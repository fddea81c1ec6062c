/**
 * Copies left behind, and copies that are live again: the one place that decides which repository
 * copies a run's outputs list for the operator to remove (final report, `status`, `report`,
 * metrics), pure, from what the caller knows.
 *
 * Candidates come from the checkpoint's summary:
 * - source copies: a moved item whose move ended `cleanup failed`, or failed after the switch,
 *   keeps a copy on the storage it left (GitLab's `remove_old_paths` never ran);
 * - destination copies: an item the run is done with (quarantined, or gone elsewhere) whose last
 *   move of ours may have copied before it failed: a job killed after the copy and rerun within its
 *   lease fails the move without a message and removes nothing; a project move whose wiki or design
 *   repository failed (or its pool copy, in releases that copy the pool after the repositories)
 *   keeps the repositories copied before it; so may one that ran out of room, since the message
 *   does not say which of its repositories was being copied. A failure in the copy itself leaves nothing there:
 *   `Repositories::ReplicateService` removes the target when its replication raises.
 *
 * A copy on the storage where its item lives now is the live repository: Gitaly's
 * ReplicateRepository fetches into a valid repository it finds at the target, so a move back onto
 * a storage with a copy (a revert, a retry onto the same destination, a move by hand) makes that
 * copy the repository. Such a copy is never listed for removal. Where the item lives is taken from,
 * in this order: a later checkpoint (a revert's, beside the forward run's), the run's own re-check
 * on the instance (event `copies.checked`, written when a run ends), and the run's own records;
 * when none of them can tell, the copy is listed as not re-checked, to be looked at first.
 */
import { classifyFailure } from '../events/failure-class.js';
import type { CopyCheckData } from '../events/vocabulary.js';
import type { Kind } from '../plan/types.js';
import type { FailedMove, OrphanCopy } from '../store/types.js';
import { diskPaths } from './disk-paths.js';
import { fitLine, headThenWrapped, wrapWords } from './wrap.js';

/** What a later checkpoint (a revert's) says of an item: where it lives, or where it is going. */
export interface LaterPlace {
  /** The storage it lives on (or is being moved onto, with `moving`); null when that checkpoint cannot tell. */
  storage: string | null;
  moving: boolean;
  /**
   * The storage a move recorded there took it off: that move's cleanup removed the repository there
   * (a cleanup that failed is that checkpoint's own copy left behind, listed with its run).
   */
  tookOff?: string | null;
  /** How that checkpoint knows, for people. */
  what: string;
}

/** How the place of a copy's item is known. */
export type Knowledge = 'instance' | 'checkpoint' | 'unknown';

/** A copy listed for the operator to remove, once checked. */
export interface LeftCopy {
  kind: Kind;
  id: number;
  name: string;
  /** The storage the copy is on. */
  source: string;
  /** `source`: the storage the item left; `destination`: where a failed move was copying it. */
  side: 'source' | 'destination';
  moveId: number | null;
  /** The move's state as the run last saw it. */
  moveState: string | null;
  /** Why the copy is there, for people. */
  cause: string;
  /** A destination copy may not exist (the move may have failed before it copied anything). */
  possible: boolean;
  /** Where the item lives, as far as `known` says; null when deleted or unknown. */
  itemStorage: string | null;
  known: Knowledge;
  /** How that is known, for people. */
  note: string;
  /** The repository paths on `source` (hashed storage, relative to the storage's path). */
  diskPaths: string[];
}

/** A copy that was (or would have been) listed as left behind, on the storage its item lives on now. */
export interface LiveCopy {
  kind: Kind;
  id: number;
  name: string;
  storage: string;
  side: 'source' | 'destination';
  moveId: number | null;
  /** Why it is live, for people. */
  why: string;
}

export interface CopiesView {
  left: LeftCopy[];
  live: LiveCopy[];
}

/** What a caller knows beyond the summary. */
export interface CopyKnowledge {
  /** The run's destination, for rows that do not record their own (older checkpoints, bulk drains). */
  destination?: string | null;
  /** The run's last re-check on the instance, with when it was made (ms since epoch). */
  checks?: { at: number; checks: readonly CopyCheckData[] } | null;
  /** A later checkpoint's view of an item (a revert's), when there is one. */
  later?: ((kind: Kind, id: number) => LaterPlace | undefined) | undefined;
}

/** Messages that say a project move copied its project repository before something later failed. */
const LATER_REPOSITORY =
  /Failed to verify (wiki|design|object_pool) repository checksum|Timeout waiting for (wiki|design) repository pushes/i;
/** Our reason for a failed move GitLab gave no message for. */
const NO_MESSAGE = /failed without an error message/;

/**
 * Whether a failed (or stuck) move of `f` may have left a copy on its destination, and why; null
 * when its failure says the copy was removed, or never made.
 */
function destinationCause(f: FailedMove): { cause: string; certain: boolean } | null {
  if (f.stuck)
    return f.moveState === 'started' || f.moveState === 'replicated'
      ? { cause: `move ${f.moveId} stuck ${f.moveState}: its job may have died after copying`, certain: false }
      : null;
  if (f.state === 'left')
    return { cause: `move ${f.moveId} failed, then the item left its source by other means`, certain: false };
  const reason = f.reason ?? '';
  if (f.kind === 'projects' && LATER_REPOSITORY.test(reason))
    return { cause: `move ${f.moveId} failed after copying the project repository: ${reason}`, certain: true };
  // The message does not say which of the project's repositories ran out of room: when it was the
  // wiki's or the design repository's copy, the project repository's copy is complete and stays.
  if (f.kind === 'projects' && classifyFailure(reason) === 'no-space')
    return {
      cause: `move ${f.moveId} ran out of room: if its wiki or design repository was being copied, the project repository's copy remains: ${reason}`,
      certain: false,
    };
  if (f.reason === null || NO_MESSAGE.test(reason))
    return {
      cause: `move ${f.moveId} failed without an error message: its job may have died after copying`,
      certain: false,
    };
  return null;
}

function keyOf(kind: Kind, id: number, storage: string): string {
  return `${kind}\u0000${id}\u0000${storage}`;
}

/** The copies the summary's candidates leave, split into those to list and those that are live. */
export function copiesOf(
  summary: { orphans?: readonly OrphanCopy[] | undefined; failedMoves?: readonly FailedMove[] | undefined },
  k: CopyKnowledge = {},
): CopiesView {
  const checked = new Map<string, CopyCheckData>();
  for (const c of k.checks?.checks ?? []) checked.set(keyOf(c.kind, c.id, c.storage), c);
  const at = k.checks ? new Date(k.checks.at).toISOString() : '';
  const out: CopiesView = { left: [], live: [] };

  const place = (
    base: Omit<LeftCopy, 'itemStorage' | 'known' | 'note' | 'diskPaths'>,
    recorded: { storage: string | null; known: Knowledge; note: string },
  ): void => {
    const later = k.later?.(base.kind, base.id);
    const check = checked.get(keyOf(base.kind, base.id, base.source));
    let where = recorded;
    if (later) {
      if (later.tookOff === base.source) return;
      if (later.storage === base.source) {
        out.live.push(liveOf(base, later.what));
        return;
      }
      where = { storage: later.storage, known: later.storage === null ? 'unknown' : 'checkpoint', note: later.what };
    } else if (check) {
      if (check.itemStorage === base.source) {
        out.live.push(liveOf(base, `re-checked on the instance at ${at}: the item lives there`));
        return;
      }
      if (check.gone) where = { storage: null, known: 'instance', note: `the item was deleted (re-checked at ${at})` };
      else if (check.itemStorage !== null)
        where = { storage: check.itemStorage, known: 'instance', note: `re-checked on the instance at ${at}` };
      else where = { storage: recorded.storage, known: 'unknown', note: `could not be re-checked: ${check.why}` };
    }
    out.left.push({
      ...base,
      itemStorage: where.storage,
      known: where.known,
      note: where.note,
      diskPaths: diskPaths(base.kind, base.id),
    });
  };

  for (const o of summary.orphans ?? []) {
    place(
      {
        kind: o.kind,
        id: o.id,
        name: o.name,
        source: o.source,
        side: 'source',
        moveId: o.moveId,
        moveState: o.moveState,
        cause: `move ${o.moveId ?? '?'} ${o.moveState === 'failed' ? 'failed after the switch' : o.moveState}`,
        possible: false,
      },
      {
        storage: null,
        known: 'checkpoint',
        note: 'moved off it, as the run recorded it; not re-checked on the instance',
      },
    );
  }
  for (const f of summary.failedMoves ?? []) {
    const why = destinationCause(f);
    const storage = f.destination ?? k.destination ?? null;
    if (!why || storage === null || storage === f.source) continue;
    const recorded = why.certain
      ? { storage: f.source, known: 'checkpoint' as const, note: 'still on its source, as the run recorded it' }
      : {
          storage: null,
          known: 'unknown' as const,
          note: 'not re-checked: a job killed after the switch leaves the item on this storage; read where it lives first',
        };
    place(
      {
        kind: f.kind,
        id: f.id,
        name: f.name,
        source: storage,
        side: 'destination',
        moveId: f.moveId,
        moveState: f.stuck ? f.moveState : 'failed',
        cause: why.cause,
        possible: !why.certain,
      },
      recorded,
    );
  }
  return out;
}

function liveOf(c: Omit<LeftCopy, 'itemStorage' | 'known' | 'note' | 'diskPaths'>, why: string): LiveCopy {
  return { kind: c.kind, id: c.id, name: c.name, storage: c.source, side: c.side, moveId: c.moveId, why };
}

/** Said wherever paths are printed: on a Gitaly Cluster storage they are not where the files are. */
export const CLUSTER_NOTE =
  'On a Gitaly Cluster (Praefect) storage these are the relative paths Praefect knows, not where its replicas are ' +
  '(@cluster/repositories/xx/yy/<repository id>): find them with ' +
  '`praefect metadata -virtual-storage <storage> -relative-path <path>`, ' +
  'and remove a copy with `praefect remove-repository`.';
/** The note in lines of 78 columns (printed two in): its commands, between backticks, are never broken. */
export const CLUSTER_NOTE_LINES: readonly string[] = fitLine(CLUSTER_NOTE, {
  width: 78,
  hang: 0,
  whole: ['<repository id>'],
});

/** The copies as lines for people (the final report and `status`): nothing when there are none. */
export function copiesLines(
  view: CopiesView,
  /** At most `limit` copies listed per list (the final summary), then where `fullList` says they all are. */
  short?: { limit: number; fullList: readonly string[] },
): string[] {
  const lines: string[] = [];
  const source = view.left.filter((c) => c.side === 'source');
  const destination = view.left.filter((c) => c.side === 'destination');
  // The note on lines of its own, wrapped to a terminal's 80 columns: it says how the place is known.
  const where = (c: LeftCopy) => [
    `    where the item lives: ${c.known === 'unknown' ? 'NOT KNOWN' : (c.itemStorage ?? 'nowhere')}`,
    ...wrapWords(`(${c.note})`, 80 - 6).map((l) => `      ${l}`),
  ];
  const listed = (copies: readonly LeftCopy[], line: (c: LeftCopy) => string) => {
    const more = short && copies.length > short.limit ? copies.length - short.limit : 0;
    for (const c of more > 0 ? copies.slice(0, short!.limit) : copies) {
      lines.push(line(c), ...pathLines(c), ...where(c));
    }
    if (more > 0)
      lines.push(`  ... and ${more} more: ${short!.fullList[0]}`, ...short!.fullList.slice(1).map((l) => `  ${l}`));
  };
  if (source.length > 0) {
    lines.push(
      '',
      `Source copies left behind (${source.length}): moved, but a copy stays on the old storage; nothing deletes it`,
    );
    listed(source, (c) => `  ${c.kind} ${c.id} ${c.name}: copy left on ${c.source} (${c.cause})`);
  }
  if (destination.length > 0) {
    lines.push('', `Copies left on the destination by failed moves (${destination.length}): nothing deletes them`);
    listed(
      destination,
      (c) => `  ${c.kind} ${c.id} ${c.name}: ${c.possible ? 'possible copy' : 'copy'} on ${c.source} (${c.cause})`,
    );
  }
  if (view.left.length > 0) lines.push(...CLUSTER_NOTE_LINES.map((l) => `  ${l}`));
  if (view.live.length > 0) {
    lines.push('', `Copies that are live (${view.live.length}): each IS its item's repository now; do not remove it`);
    for (const c of view.live) lines.push(`  ${c.kind} ${c.id} ${c.name} on ${c.storage}: ${c.why}`);
  }
  return lines;
}

/**
 * Where a copy is on its storage: the first path whole after `at` (a hashed path is longer than a
 * line's rest can be: it is never broken, to be pasted), the rest of the phrase wrapped below it.
 */
function pathLines(c: LeftCopy): string[] {
  const words = pathsInWords(c.diskPaths);
  const cut = c.diskPaths.length > 0 && words.startsWith(`${c.diskPaths[0]}, `) ? c.diskPaths[0]!.length + 1 : -1;
  const where = `(relative to ${c.source}'s path; those that exist)`;
  if (cut < 0) return headThenWrapped('    ', `at ${words}`, where);
  return headThenWrapped('    ', `at ${words.slice(0, cut)}`, `${words.slice(cut + 1)} ${where}`);
}

/**
 * A repository's paths on disk as one short phrase: the first whole (to paste), the others that
 * share its stem by their ending only (`.wiki.git`, `.design.git`), which a terminal line can hold.
 */
export function pathsInWords(paths: readonly string[]): string {
  const [first, ...rest] = paths;
  if (first === undefined) return '(no path)';
  const stem = first.endsWith('.git') ? first.slice(0, -'.git'.length) : null;
  if (stem === null || rest.length === 0 || !rest.every((p) => p.startsWith(stem))) return paths.join(', ');
  const endings = rest.map((p) => p.slice(stem.length));
  return `${first}, with its ${endings.join(' and ')} beside it`;
}
