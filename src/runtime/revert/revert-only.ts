/**
 * `shardmove revert PLAN --only FILE`: moves back only the items of a reviewed list (the format
 * `run --only` takes, ./items-format.ts), and leaves everything else the forward run moved where it
 * put it. The list is read and checked before anything is contacted (exit 2 for a list that is not
 * usable, exit 4 for one made under another plan), as `run --only` does.
 *
 * Each listed item is matched with the forward run's items by kind and id, and its storages must be
 * those the forward run moved it between (the list's source is where the item goes back to). A
 * listed item the forward run did not move (or moved between other storages) is named and not
 * touched; none matching at all is refused (exit 2): that list is not of this drain. The forward
 * run's items the list leaves out stay on the destination, and the revert's verification says so
 * ("N items stay on cluster (N not in the list)").
 *
 * One revert checkpoint holds every list: its rows are the items a revert took so far, so a second
 * list continues where the first one ended (an item already taken is never read or moved again),
 * and a plain `revert` afterwards moves back the rest. An unfinished list (rows still to move) is
 * resumed by the same list, or by a plain revert; another list is refused meanwhile (exit 4), so
 * that no item outside the list in force is ever moved.
 */
import { resolve } from 'node:path';
import type { RevertItem, SkippedItem } from '../../actors/index.js';
import type { InstanceApi, ItemRecord } from '../../api/types.js';
import type { LoadedPlan } from '../../plan/load.js';
import type { Kind } from '../../plan/types.js';
import { shellWord } from '../../shared/shell-word.js';
import { ITEMS_FILE_INVALID, ITEMS_OTHER_LIST, ITEMS_OTHER_PLAN, RuntimeError } from '../errors.js';
import { readItemsFile } from '../lists/items-file.js';
import type { ItemsFormat, ListedItem } from '../lists/items-format.js';
import { digestOf } from '../lists/items-format.js';

/** The list of a `revert --only`, as read and checked. */
export interface RevertList {
  /** The file as the operator named it. */
  file: string;
  digest: string;
  items: ListedItem[];
}

/** A listed item the revert does not touch, and why. */
export interface NotMovedByForward {
  kind: Kind;
  id: number;
  path: string;
  line: number;
  reason: string;
}

/** The forward run's items split by the list. */
export interface ListSelection {
  /** Items of the list the forward run moved: the revert's to move back (when still where it put them). */
  chosen: RevertItem[];
  /** Items of the list the forward run did not move (or between other storages): named, not touched. */
  notMoved: NotMovedByForward[];
}

const key = (kind: string, id: number) => `${kind}:${id}`;

/** Reads the list; throws ITEMS_FILE_INVALID (exit 2) or ITEMS_OTHER_PLAN (exit 4) before anything is contacted. */
export function readRevertList(
  o: { file: string; format: ItemsFormat | null; cwd: string; planFile: string },
  loaded: LoadedPlan,
): RevertList {
  const list = readItemsFile(resolve(o.cwd, o.file), o.file, o.format);
  if (list.planHash !== loaded.hash)
    throw new RuntimeError(
      ITEMS_OTHER_PLAN,
      `refusing: ${o.file} was made under plan hash ${list.planHash}, and ${o.planFile} hashes ${loaded.hash} now. ` +
        `A revert applies a list made under the forward run's plan (\`shardmove run ${shellWord(o.planFile)} --dry-run --items FILE\` wrote it); nothing was written`,
    );
  if (list.items.length === 0)
    throw new RuntimeError(
      ITEMS_FILE_INVALID,
      `${o.file} cannot be applied: the list names no item: there is nothing to move back. Nothing was read from the instance or written`,
    );
  return { file: o.file, digest: digestOf(list.planHash, list.items), items: list.items };
}

/**
 * The forward run's items that the list names (with the storages the forward run moved them
 * between), and the list's items it did not move. Throws ITEMS_FILE_INVALID when none matches.
 */
export function selectByList(moved: readonly RevertItem[], list: RevertList, forwardFile: string): ListSelection {
  const byKey = new Map(moved.map((m) => [key(m.kind, m.id), m]));
  const chosen: RevertItem[] = [];
  const notMoved: NotMovedByForward[] = [];
  for (const it of list.items) {
    const m = byKey.get(key(it.kind, it.id));
    const named = { kind: it.kind, id: it.id, path: it.path, line: it.line };
    if (!m) notMoved.push({ ...named, reason: 'the forward run did not move it' });
    else if (m.to !== it.source || m.from !== it.destination)
      notMoved.push({
        ...named,
        reason: `the forward run moved it from ${m.to} to ${m.from}, the list says ${it.source} -> ${it.destination}`,
      });
    else chosen.push(m);
  }
  if (chosen.length === 0) {
    const shown = notMoved.slice(0, 10).map((n) => `  ${list.file}:${n.line}: ${n.kind} ${n.id}: ${n.reason}`);
    if (notMoved.length > 10) shown.push(`  ... and ${notMoved.length - 10} more`);
    throw new RuntimeError(
      ITEMS_FILE_INVALID,
      `${list.file} cannot be applied: none of its ${list.items.length} item(s) was moved by the forward run of ${forwardFile}; nothing was written:\n${shown.join('\n')}`,
    );
  }
  return { chosen, notMoved };
}

/**
 * Refuses (exit 4) a list while the revert's checkpoint holds items still to move (or quarantined
 * ones `--retry-quarantined` would release) that the list does not name: moving them under this
 * list would move items outside it. `open`: keys of such rows; `last`: the list that took them.
 */
export function refuseOtherOpenItems(
  open: readonly { kind: Kind; id: number; state: string }[],
  list: RevertList,
  a: { revertFile: string; last: string | null; command: string },
): void {
  const listed = new Set(list.items.map((i) => key(i.kind, i.id)));
  const outside = open.filter((o) => !listed.has(key(o.kind, o.id)));
  if (outside.length === 0) return;
  const named = outside
    .slice(0, 5)
    .map((o) => `${o.kind} ${o.id} (${o.state})`)
    .join(', ');
  const more = outside.length > 5 ? ` and ${outside.length - 5} more` : '';
  const resume = a.last ? `resume that list first (${a.command} --only ${shellWord(a.last)}), or ` : '';
  throw new RuntimeError(
    ITEMS_OTHER_LIST,
    `refusing: ${a.revertFile} holds ${outside.length} item(s) of an earlier revert not in ${list.file} still to move back (${named}${more}); ` +
      `this list would move them too. ${resume}move back everything left with a plain \`${a.command}\`. Nothing was written`,
  );
}

/**
 * The client with every item read kept by id, so that the list's paths can be held to the
 * instance's names of the same reads (`names`).
 */
export function recordingNames(api: InstanceApi): { api: InstanceApi; names: Map<string, string> } {
  const names = new Map<string, string>();
  const wrapped = Object.assign(Object.create(api) as InstanceApi, {
    getItem: async (kind: Kind, id: number, o?: Parameters<InstanceApi['getItem']>[2]) => {
      const r: ItemRecord | null = await api.getItem(kind, id, o);
      if (r) names.set(key(kind, id), r.name);
      return r;
    },
  });
  return { api: wrapped, names };
}

/**
 * The items to move back whose instance name differs from the list's path (renamed since the list
 * was reviewed), as skipped: what was reviewed is not what is there now.
 */
export function renamedSinceList(
  items: readonly RevertItem[],
  list: RevertList,
  names: ReadonlyMap<string, string>,
): { keep: RevertItem[]; renamed: SkippedItem[] } {
  const paths = new Map(list.items.map((i) => [key(i.kind, i.id), i.path]));
  const keep: RevertItem[] = [];
  const renamed: SkippedItem[] = [];
  for (const it of items) {
    const listed = paths.get(key(it.kind, it.id));
    const now = names.get(key(it.kind, it.id));
    if (listed && now !== undefined && now !== listed)
      renamed.push({
        ...it,
        name: now,
        storage: it.from,
        reason: `renamed since the list was made (the list says ${listed}, the instance ${now}): not moved back`,
      });
    else keep.push(it);
  }
  return { keep, renamed };
}
