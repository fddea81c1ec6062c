/**
 * `move.select`: which listed items the run moves. A pure matcher over what a listing shows of each
 * item, and the few reads it needs beyond that (a project snippet's project), shared by the drain's
 * enumeration, verification and pre-flight's room check so that they all choose the same items.
 *
 * How each kind follows a selection:
 * - projects: by id, by full path, or by a namespace they are in (subgroups included);
 * - group wikis: with their group, when the group is a selected namespace or inside one;
 * - project snippets: with their project (`project_id`), whatever chooses the project;
 * - personal snippets: with their author's personal namespace, the username (`author.username`):
 *   `namespaces: [alice]` takes alice's personal projects and personal snippets.
 * `exclude` wins over everything: an excluded project takes its snippets along, an excluded
 * namespace everything in it. A selection of only `exclude` chooses everything else.
 * What cannot be placed is not chosen: a project snippet whose project cannot be read (hidden,
 * pending deletion, deleted) moves only when its project is named by id, a snippet without an
 * author never moves by a namespace.
 */
import type { ItemRecord } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import type { MoveSelect } from '../plan/values.js';
import type { ActorDeps } from './types.js';
import type { ItemLookup } from '../store/views.js';

/** A selection ready to match: lower-case paths (GitLab paths ignore case), ids. */
export interface Selection {
  /** Something was named to choose (namespaces, projects, file); false: only `exclude`. */
  positive: boolean;
  projectIds: ReadonlySet<number>;
  projectPaths: ReadonlySet<string>;
  /** Namespaces, and the file's paths (a project or a namespace): the path itself or anything under it. */
  under: readonly string[];
  excludeIds: ReadonlySet<number>;
  excludeUnder: readonly string[];
}

const compiled = new WeakMap<MoveSelect, Selection>();

/** The plan's selection, or null when the plan moves everything. */
export function selectionOf(plan: { move: { select?: MoveSelect | null | undefined } }): Selection | null {
  const sel = plan.move.select;
  if (!sel) return null;
  let out = compiled.get(sel);
  if (!out) {
    const fileRefs = sel.file?.entries.map((e) => e.ref) ?? [];
    const ids = (refs: (number | string)[]) => new Set(refs.filter((r): r is number => typeof r === 'number'));
    const paths = (refs: (number | string)[]) =>
      refs.filter((r): r is string => typeof r === 'string').map((p) => p.toLowerCase());
    const projects = sel.projects.map((e) => e.ref);
    out = {
      positive: sel.namespaces.length + sel.projects.length + fileRefs.length > 0,
      projectIds: new Set([...ids(projects), ...ids(fileRefs)]),
      projectPaths: new Set(paths(projects)),
      under: [...paths(sel.namespaces.map((e) => e.ref)), ...paths(fileRefs)],
      excludeIds: ids(sel.exclude.map((e) => e.ref)),
      excludeUnder: paths(sel.exclude.map((e) => e.ref)),
    };
    compiled.set(sel, out);
  }
  return out;
}

/**
 * A project the plan names by a former full path (the instance redirected the path to it): the
 * selection follows it by id, since no listing shows it under the name the plan wrote. `list` is
 * where the name is written; an excluded one is excluded by id.
 */
export function followFormerPath(
  plan: { move: { select?: MoveSelect | null | undefined } },
  list: 'projects' | 'exclude' | 'file',
  id: number,
): void {
  const s = selectionOf(plan);
  if (!s) return;
  // The compiled selection's sets are this module's own Sets, read-only only to the callers.
  (list === 'exclude' ? (s.excludeIds as Set<number>) : (s.projectIds as Set<number>)).add(id);
}

/** Whether `path` is one of `roots` or inside one of them. */
function underAny(path: string, roots: readonly string[]): boolean {
  const p = path.toLowerCase();
  return roots.some((r) => p === r || p.startsWith(`${r}/`));
}

/** A project, by its id and full path. */
export function projectChosen(s: Selection, id: number, path: string): boolean {
  if (s.excludeIds.has(id) || underAny(path, s.excludeUnder)) return false;
  if (!s.positive) return true;
  return s.projectIds.has(id) || s.projectPaths.has(path.toLowerCase()) || underAny(path, s.under);
}

/** A group wiki, by its group's full path. */
export function groupChosen(s: Selection, fullPath: string): boolean {
  if (underAny(fullPath, s.excludeUnder)) return false;
  return !s.positive || underAny(fullPath, s.under);
}

/**
 * A snippet: a project snippet with its project (`projectPath` null when the project cannot be
 * read: chosen only by the project's id), a personal one with its author's namespace.
 */
export function snippetChosen(
  s: Selection,
  snippet: { projectId: number | null; author: string | null },
  projectPath: string | null,
): boolean {
  if (snippet.projectId !== null) {
    if (projectPath !== null) return projectChosen(s, snippet.projectId, projectPath);
    return s.positive && s.projectIds.has(snippet.projectId) && !s.excludeIds.has(snippet.projectId);
  }
  if (snippet.author === null) return false;
  if (underAny(snippet.author, s.excludeUnder)) return false;
  return !s.positive || underAny(snippet.author, s.under);
}

/** An item a listing could not show (only its id is known): chosen only when named by that id. */
export function unlistableChosen(s: Selection, kind: Kind, id: number): boolean {
  return kind === 'projects' && s.positive && s.projectIds.has(id) && !s.excludeIds.has(id);
}

/** Project paths read for project snippets, per client (one read per project and process). */
const projectPaths = new WeakMap<object, Map<number, string | null>>();
const PARALLEL_READS = 8;

/**
 * Which of `items` (one listing page of `kind`) the selection chooses, by id. Reads the project of
 * each project snippet it does not know yet: from the checkpoint (a project listed on a source), else
 * from the instance, once per project.
 */
export async function chooseItems(
  deps: Pick<ActorDeps<ItemLookup>, 'api' | 'store'>,
  s: Selection,
  kind: Kind,
  items: readonly ItemRecord[],
): Promise<Map<number, boolean>> {
  const out = new Map<number, boolean>();
  if (kind === 'projects') for (const it of items) out.set(it.id, projectChosen(s, it.id, it.name));
  else if (kind === 'groups') for (const it of items) out.set(it.id, groupChosen(s, it.name));
  else {
    const paths = await snippetProjectPaths(deps, items);
    for (const it of items) {
      const projectId = it.projectId ?? null;
      const path = projectId === null ? null : (paths.get(projectId) ?? null);
      out.set(it.id, snippetChosen(s, { projectId, author: it.author ?? null }, path));
    }
  }
  return out;
}

async function snippetProjectPaths(
  deps: Pick<ActorDeps<ItemLookup>, 'api' | 'store'>,
  items: readonly ItemRecord[],
): Promise<Map<number, string | null>> {
  let cache = projectPaths.get(deps.api);
  if (!cache) projectPaths.set(deps.api, (cache = new Map()));
  const wanted = [...new Set(items.map((i) => i.projectId ?? null).filter((p): p is number => p !== null))].filter(
    (p) => !cache.has(p),
  );
  const unknown: number[] = [];
  for (const p of wanted) {
    const row = deps.store.getItem('projects', p);
    if (row) cache.set(p, row.name);
    else unknown.push(p);
  }
  for (let i = 0; i < unknown.length; i += PARALLEL_READS) {
    const ids = unknown.slice(i, i + PARALLEL_READS);
    const read = await Promise.all(ids.map((id) => deps.api.getItem('projects', id)));
    ids.forEach((id, j) => cache.set(id, read[j]?.name ?? null));
  }
  return cache;
}

/** The first of `roots` that `path` is or is inside, or null. */
function rootOf(path: string, roots: readonly string[]): string | null {
  const p = path.toLowerCase();
  return roots.find((r) => p === r || p.startsWith(`${r}/`)) ?? null;
}

/** Why a project or group at `path` (chosen once) is no longer: "excluded by acme/team", "outside the selection". */
function whyOut(s: Selection, path: string): string {
  const root = rootOf(path, s.excludeUnder);
  return root !== null ? `excluded by ${root}` : 'in none of the selected namespaces or projects';
}

/** What the instance shows of an item now, judged by the selection: `reason` says why it is out. */
export interface CurrentChoice {
  chosen: boolean;
  /** Why it left the selection ("left the selection: now acme/team/web, excluded by acme/team"); null when chosen. */
  reason: string | null;
}

/**
 * Judges one item again on the instance's current state: its project's or group's full path as it
 * is now (a project transferred into an excluded namespace since it was listed is out), a project
 * snippet by its project's current path, a personal snippet by its author. An item that cannot be
 * read now (hidden, 404) is judged by what was last seen of it (`knownPath`): the move's own read
 * decides whether it is still there.
 */
export async function judgeNow(
  deps: Pick<ActorDeps<ItemLookup>, 'api'>,
  s: Selection,
  kind: Kind,
  id: number,
  knownPath: string,
): Promise<CurrentChoice> {
  const item = await deps.api.getItem(kind, id);
  if (kind === 'projects') {
    const path = item?.name ?? knownPath;
    if (projectChosen(s, id, path)) return { chosen: true, reason: null };
    return { chosen: false, reason: `left the selection: now ${path}, ${whyOut(s, path)}` };
  }
  if (kind === 'groups') {
    const path = item?.name ?? knownPath;
    if (groupChosen(s, path)) return { chosen: true, reason: null };
    return { chosen: false, reason: `left the selection: the group is now ${path}, ${whyOut(s, path)}` };
  }
  if (item === null) return { chosen: true, reason: null };
  const projectId = item.projectId ?? null;
  const author = item.author ?? null;
  const project = projectId === null ? null : await deps.api.getItem('projects', projectId);
  const path = project?.name ?? null;
  if (snippetChosen(s, { projectId, author }, path)) return { chosen: true, reason: null };
  if (projectId !== null) {
    return {
      chosen: false,
      reason:
        path === null
          ? `left the selection: its project ${projectId} cannot be read`
          : `left the selection: its project is now ${path}, ${whyOut(s, path)}`,
    };
  }
  return {
    chosen: false,
    reason: `left the selection: its author ${author ?? '(none)'} is ${whyOut(s, author ?? '')}`,
  };
}
