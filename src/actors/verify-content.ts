/**
 * The second half of content verification (the plan's `verify.content`; the first is
 * ./drain/content.ts): every sampled project that moved is read again and compared with the
 * fingerprint recorded right before its move was posted. A difference (another HEAD, fewer branches
 * or tags) fails verification, naming the project with both values; a project that could not be
 * compared (no fingerprint before its move, the project gone since, a read that failed now) is
 * named as such and counted apart: it was not proven, and it is not called equal.
 *
 * The comparison is of the repository as the instance serves it now, so a push made after the move
 * ended (the repository is writable again from `replicated`) also shows as a difference: the report
 * says when the move ended, for the operator to tell the two apart.
 */
import { fingerprintDifferences } from '../api/fingerprint.js';
import type { RepositoryFingerprint } from '../api/fingerprint.js';
import type { AuditEventMap } from '../events/vocabulary.js';
import { verifyContentOf } from '../plan/verify-field.js';
import type { ContentVerifyOutput } from '../machine/types.js';
import { abortError } from './errors.js';
import { inContentSample } from './drain/content.js';
import type { ActorDeps } from './types.js';
import type { VerifyStore } from '../store/views.js';

/** Projects named per list in the output (all are in the checkpoint's `content.checked` events). */
const MAX_NAMED = 50;
/** Reads at once: each project costs four GETs. */
const PARALLEL = 8;
const PAGE = 10_000;

type Recorded = AuditEventMap['content.recorded'];

/** A project whose fingerprint was never read before its move. */
const NOT_READ: Omit<Recorded, 'id' | 'kind' | 'source'> = {
  defaultBranch: null,
  head: null,
  branches: null,
  tags: null,
  error: 'none was taken: its bulk POST may have been sent already',
};

function shape(f: RepositoryFingerprint | Recorded | null) {
  return f === null ? null : { head: f.head, branches: f.branches, tags: f.tags };
}

/** Compares the moved sampled projects; null when the plan asks for no content check. */
export async function verifyContent(
  deps: ActorDeps<VerifyStore>,
): Promise<{ output: ContentVerifyOutput; problems: string[] } | null> {
  const content = verifyContentOf(deps.plan.verify);
  if (content === null) return null;
  const { store } = deps;
  // The newest reading of each project: the one before the attempt that moved it.
  const latest = new Map<number, Recorded>();
  for (let after = 0; ;) {
    const page = store.eventsOf(['content.recorded'], after, PAGE);
    for (const e of page) latest.set(e.data.id, e.data);
    if (page.length < PAGE) break;
    after = page[page.length - 1]!.seq;
  }
  const output: ContentVerifyOutput = {
    fraction: content.fraction,
    sampled: 0,
    equal: 0,
    differ: 0,
    notCompared: 0,
    differing: [],
    unchecked: [],
  };
  const problems: string[] = [];
  // One read of each project's row: whether it moved, and its name for the output.
  const moved = [...latest.values()].flatMap((r) => {
    const row = store.getItem('projects', r.id);
    return row?.state === 'moved' ? [{ ...r, name: row.name }] : [];
  });
  // A sampled project moved with no reading at all (a bulk job's, once its POST may have been
  // sent before a restart): not compared, and said so, never left out of the count.
  if (deps.plan.move.kinds.includes('projects'))
    for (const source of deps.plan.move.from)
      for (const row of store.itemsInState('projects', source, 'moved', Number.MAX_SAFE_INTEGER)) {
        if (row.moveId === null || latest.has(row.id) || !inContentSample(row.id, content.fraction)) continue;
        moved.push({ ...NOT_READ, id: row.id, kind: 'projects', source, name: row.name });
      }
  for (let i = 0; i < moved.length; i += PARALLEL) {
    if (deps.signal.aborted) throw abortError(deps.signal);
    const batch = moved.slice(i, i + PARALLEL);
    const now = await Promise.allSettled(
      batch.map((r) => (r.error === undefined ? deps.api.repositoryFingerprint(r.id) : Promise.resolve(null))),
    );
    batch.forEach((before, j) => {
      const { name } = before;
      const res = now[j] as PromiseSettledResult<RepositoryFingerprint | null>;
      output.sampled++;
      let why: string | undefined;
      let after: RepositoryFingerprint | null = null;
      if (before.error !== undefined) why = `its fingerprint could not be read before its move (${before.error})`;
      else if (res.status === 'rejected')
        why = `it could not be read now (${res.reason instanceof Error ? res.reason.message : String(res.reason)})`;
      else if (res.value === null) why = 'the instance no longer finds it';
      else after = res.value;
      const differences = after === null ? [] : fingerprintDifferences(before, after);
      store.appendEvent(
        'content.checked',
        {
          kind: 'projects',
          source: before.source,
          id: before.id,
          differences,
          before: before.error === undefined ? shape(before) : null,
          after: shape(after),
          ...(why !== undefined ? { unchecked: why } : {}),
        },
        deps.clock.now(),
      );
      if (why !== undefined) {
        output.notCompared++;
        if (output.unchecked.length < MAX_NAMED) output.unchecked.push({ id: before.id, name, why });
      } else if (differences.length > 0) {
        output.differ++;
        if (output.differing.length < MAX_NAMED) output.differing.push({ id: before.id, name, differences });
        if (problems.length < MAX_NAMED)
          problems.push(
            `projects ${before.id} (${name}): its content differs after its move: ${differences.join('; ')}`,
          );
      } else output.equal++;
    });
  }
  if (output.differ > problems.length)
    problems.push(`projects: ${output.differ - problems.length} more whose content differs after the move`);
  deps.log.info(
    { sampled: output.sampled, equal: output.equal, differ: output.differ, notCompared: output.notCompared },
    'content verification finished',
  );
  return { output, problems };
}
