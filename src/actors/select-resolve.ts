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
 * SHARDMOVE_SELECT_UNLISTABLE or SHARDMOVE_SELECT_UNKNOWN.
 */
export async function resolveSelection(
  deps: Pick<ActorDeps, 'api' | 'plan' | 'log' | 'signal'>,
  access: Partial<Record<Kind, KindAccessMode>>,
): Promise<void> {
  const sel = deps.plan.move.select;
  if (!sel) return;
  const byRecords = deps.plan.move.kinds.filter((k) => access[k] === 'records');
  if (byRecords.length > 0) {
    throw new StepError(
      SELECT_UNLISTABLE,
      `move.select chooses items, but the instance does not expose the storage of ${byRecords.join(' and ')}, which would move by one bulk move per source storage, ` +
        `taking everything there. Leave ${byRecords.join(' and ')} out of move.kinds (and move them in a run of their own), or drop move.select. Nothing was written`,
    );
  }
  const checks: { entry: SelectEntry; form: Form; list: string }[] = [
    ...sel.namespaces.map((entry) => ({ entry, form: 'namespace' as const, list: 'namespaces' })),
    ...sel.projects.map((entry) => ({ entry, form: 'project' as const, list: 'projects' })),
    ...sel.exclude.map((entry) => ({ entry, form: 'either' as const, list: 'exclude' })),
    ...(sel.file?.entries ?? []).map((entry) => ({ entry, form: 'either' as const, list: 'file' })),
  ];
  const problems: string[] = [];
  for (let i = 0; i < checks.length; i += PARALLEL_READS) {
    if (deps.signal.aborted) throw deps.signal.reason instanceof Error ? deps.signal.reason : new Error('aborted');
    const batch = checks.slice(i, i + PARALLEL_READS);
    const found = await Promise.all(batch.map((c) => lookUp(deps, c.entry.ref, c.form)));
    batch.forEach((c, j) => {
      const problem = problemOf(c.entry.ref, c.form, found[j] ?? null);
      if (problem) problems.push(`${c.entry.at}: ${problem}`);
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
}

/** What `ref` is on the instance, asking only what `form` needs (and a second read to explain a miss). */
async function lookUp(deps: Pick<ActorDeps, 'api'>, ref: number | string, form: Form): Promise<Found> {
  if (typeof ref === 'number') return (await deps.api.findProject(ref)) === null ? null : 'project';
  if (form === 'namespace') {
    if ((await deps.api.getNamespace(ref)) !== null) return 'namespace';
    return (await deps.api.findProject(ref)) === null ? null : 'project';
  }
  if ((await deps.api.findProject(ref)) !== null) return 'project';
  return (await deps.api.getNamespace(ref)) === null ? null : 'namespace';
}

/** Why a name does not do what its list asks, or null when it does. */
function problemOf(ref: number | string, form: Form, found: Found): string | null {
  const name = typeof ref === 'number' ? `project ${ref}` : JSON.stringify(ref);
  if (found === null)
    return typeof ref === 'number'
      ? `no project has id ${ref}`
      : form === 'namespace'
        ? `no group or user has the full path ${name}`
        : form === 'project'
          ? `no project has the full path ${name}`
          : `no project, group or user has the full path ${name}`;
  if (form === 'namespace' && found === 'project')
    return `${name} is a project, not a namespace: list it under move.select.projects`;
  if (form === 'project' && found === 'namespace')
    return `${name} is a namespace, not a project: list it under move.select.namespaces`;
  return null;
}
