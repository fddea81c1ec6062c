/**
 * Pre-flight's look at `move.select`: every name it holds must be on the instance, and every kind
 * the run moves must be listable, since a kind moved by one bulk move per storage takes everything
 * there. Read-only. Refuses with every unknown name at once, each at the place it is written
 * (`plan.yaml:12:7`, or `pilot.txt:3` for a line of the select file), before anything is written.
 */
import type { KindAccessMode } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import type { SelectEntry } from '../plan/values.js';
import { SELECT_UNKNOWN, SELECT_UNLISTABLE, StepError } from './errors.js';
import { followFormerPath } from './select.js';
import type { ActorDeps } from './types.js';

/** Names asked at once. */
const PARALLEL_READS = 8;
/** Unknown names listed in the refusal before the rest are counted. */
const MAX_LISTED = 50;

type Form = 'namespace' | 'project' | 'either';

/** What the instance says a name is. */
type Found = 'project' | 'namespace' | null;

/**
 * Checks the plan's selection against the instance (the log says how many names). Throws StepError
 * SHARDMOVE_SELECT_UNLISTABLE or SHARDMOVE_SELECT_UNKNOWN. Returns the warnings: each project named
 * to move (`projects`, or a project line of the file) that is on none of the sources, with where it
 * is, since the run does not move it and would otherwise never say so.
 */
export async function resolveSelection(
  deps: Pick<ActorDeps, 'api' | 'plan' | 'log' | 'signal'>,
  access: Partial<Record<Kind, KindAccessMode>>,
): Promise<string[]> {
  const sel = deps.plan.move.select;
  if (!sel) return [];
  const byRecords = deps.plan.move.kinds.filter((k) => access[k] === 'records');
  if (byRecords.length > 0) {
    throw new StepError(
      SELECT_UNLISTABLE,
      `move.select chooses items, but the instance does not expose the storage of ${byRecords.join(' and ')}, which would move by one bulk move per source storage, ` +
        `taking everything there. Leave ${byRecords.join(' and ')} out of move.kinds (and move them in a run of their own), or drop move.select. Nothing was written`,
    );
  }
  const checks: { entry: SelectEntry; form: Form; list: 'namespaces' | 'projects' | 'exclude' | 'file' }[] = [
    ...sel.namespaces.map((entry) => ({ entry, form: 'namespace' as const, list: 'namespaces' as const })),
    ...sel.projects.map((entry) => ({ entry, form: 'project' as const, list: 'projects' as const })),
    ...sel.exclude.map((entry) => ({ entry, form: 'either' as const, list: 'exclude' as const })),
    ...(sel.file?.entries ?? []).map((entry) => ({ entry, form: 'either' as const, list: 'file' as const })),
  ];
  const problems: string[] = [];
  const elsewhere: { name: string; at: string; storage: string }[] = [];
  const renamed: string[] = [];
  for (let i = 0; i < checks.length; i += PARALLEL_READS) {
    if (deps.signal.aborted) throw deps.signal.reason instanceof Error ? deps.signal.reason : new Error('aborted');
    const batch = checks.slice(i, i + PARALLEL_READS);
    const found = await Promise.all(batch.map((c) => lookUp(deps, c.entry.ref, c.form)));
    batch.forEach((c, j) => {
      const seen = found[j] ?? { found: null, storage: null };
      const problem = problemOf(c.entry.ref, c.form, seen.found);
      if (problem) problems.push(`${c.entry.at}: ${problem}`);
      if (!problem && seen.now) {
        followFormerPath(deps.plan, c.list === 'namespaces' ? 'projects' : c.list, seen.now.id);
        renamed.push(
          `move.select: project ${seen.now.id} (${c.entry.at}) was ${String(c.entry.ref)}, now ${seen.now.path}: ` +
            `the instance redirects the former path, and the run follows project ${seen.now.id}; write ${seen.now.path} in the plan`,
        );
      }
      if (problem) return;
      if (c.list !== 'exclude' && seen.found === 'project' && seen.storage !== null) {
        if (!deps.plan.move.from.includes(seen.storage))
          elsewhere.push({ name: nameOf(c.entry.ref), at: c.entry.at, storage: seen.storage });
      }
    });
  }
  if (problems.length > 0) {
    const listed = problems.slice(0, MAX_LISTED);
    const more = problems.length > MAX_LISTED ? `\n    ... and ${problems.length - MAX_LISTED} more` : '';
    throw new StepError(
      SELECT_UNKNOWN,
      `move.select names ${problems.length === 1 ? 'something' : `${problems.length} things`} the instance does not have. Nothing was written:\n` +
        listed.map((p) => `    ${p}`).join('\n') +
        more,
    );
  }
  deps.log.info({ names: checks.length }, 'move.select: every name is on the instance');
  const out = [...renamed.slice(0, MAX_LISTED)];
  if (renamed.length > MAX_LISTED)
    out.push(`move.select: ${renamed.length - MAX_LISTED} more names are former paths of renamed or moved projects`);
  const far = elsewhere
    .slice(0, MAX_LISTED)
    .map(
      (e) =>
        `move.select: ${e.name} (${e.at}) is named but not on a source storage (on ${e.storage}): this run does not move it`,
    );
  out.push(...far);
  if (elsewhere.length > MAX_LISTED)
    out.push(`move.select: ${elsewhere.length - MAX_LISTED} more named projects are not on a source storage either`);
  return out;
}

/** A name as the messages give it: `project 4711`, or the path in quotes. */
function nameOf(ref: number | string): string {
  return typeof ref === 'number' ? `project ${ref}` : JSON.stringify(ref);
}

/** What `ref` is on the instance, and a project's storage when its read shows one. */
interface Seen {
  found: Found;
  storage: string | null;
  /** A project named by a former path: where it is now. */
  now?: { id: number; path: string };
}

/** What `ref` is on the instance, asking only what `form` needs (and a second read to explain a miss). */
async function lookUp(deps: Pick<ActorDeps, 'api'>, ref: number | string, form: Form): Promise<Seen> {
  const project = async (): Promise<Seen | null> => {
    const p = await deps.api.findProject(ref);
    if (p === null) return null;
    if (p === 'hidden') return { found: 'project', storage: null };
    // GitLab answers a former path with the project (the client follows the redirect): the path
    // it shows is then not the one asked. Paths ignore case.
    const moved = typeof ref === 'string' && p.name.toLowerCase() !== ref.toLowerCase();
    return { found: 'project', storage: p.storage, ...(moved ? { now: { id: p.id, path: p.name } } : {}) };
  };
  const namespace = async (): Promise<Seen | null> =>
    (await deps.api.getNamespace(String(ref))) === null ? null : { found: 'namespace', storage: null };
  const none: Seen = { found: null, storage: null };
  if (typeof ref === 'number') return (await project()) ?? none;
  // A quoted string of digits is a path, and no project's path is one (it has a namespace), while
  // GET /projects/2024 would read project id 2024.
  if (/^\d+$/.test(ref)) return (await namespace()) ?? none;
  if (form === 'namespace') return (await namespace()) ?? (await project()) ?? none;
  return (await project()) ?? (await namespace()) ?? none;
}

/** Why a name does not do what its list asks, or null when it does. */
function problemOf(ref: number | string, form: Form, found: Found): string | null {
  const name = nameOf(ref);
  if (found === null)
    return typeof ref === 'number'
      ? `no project has id ${ref}`
      : form === 'namespace'
        ? `no group or user has the full path ${name}`
        : form === 'project'
          ? `no project has the full path ${name}`
          : `no project, group or user has the full path ${name}${/^\d+$/.test(ref) ? `; a project id is written without quotes (${ref})` : ''}`;
  if (form === 'namespace' && found === 'project')
    return `${name} is a project, not a namespace: list it under move.select.projects`;
  if (form === 'project' && found === 'namespace')
    return `${name} is a namespace, not a project: list it under move.select.namespaces`;
  return null;
}
