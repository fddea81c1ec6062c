/**
 * A reviewed item list (`run --only FILE`) runs in a checkpoint of its own: a fresh one, which it
 * seeds, or one seeded from the same list, which it resumes. Refused (exit 4, nothing written): a
 * list on a checkpoint seeded from another list or on one whose run lists its sources (its rows are
 * a whole drain's), and a run without `--only` on a list's checkpoint (it would take the seeded
 * listings as done and verify nothing of the rest, or, resumed by mistake after Ctrl-C, move what
 * the review left out).
 */
import { ITEMS_OTHER_LIST, RuntimeError } from '../errors.js';
import type { RunOptions } from '../types.js';
import type { ListStore } from '../../store/views.js';

export function assertGivenList(
  store: ListStore,
  file: string,
  opts: Pick<RunOptions, 'given' | 'dryRun' | 'mode' | 'planFile'>,
  now: number,
): void {
  if ((opts.mode ?? 'run') !== 'run' || opts.dryRun) return;
  const held = store.givenList();
  if (!opts.given) {
    if (held)
      throw new RuntimeError(
        ITEMS_OTHER_LIST,
        `refusing: ${file} holds the run of the reviewed list ${held.file} (${held.items} item(s), digest ${held.digest.slice(0, 12)}...), which only that list resumes: ` +
          `run it again with --only ${held.file}. A drain of everything the plan selects needs a checkpoint of its own (--state)`,
      );
    return;
  }
  if (held && held.digest !== opts.given.digest)
    throw new RuntimeError(
      ITEMS_OTHER_LIST,
      `refusing: ${file} holds the run of another reviewed list, ${held.file} (${held.items} item(s), digest ${held.digest.slice(0, 12)}...); ` +
        `${opts.given.file} has digest ${opts.given.digest.slice(0, 12)}... (a line added, removed or changed). Resume that list with --only ${held.file}, ` +
        'or give this one a checkpoint of its own (--state)',
    );
  if (!held && store.summary(now).counts.some((c) => c.n > 0))
    throw new RuntimeError(
      ITEMS_OTHER_LIST,
      `refusing: ${file} holds a run that lists its sources (its items are a whole drain's), and a reviewed list moves its own items only: ` +
        'give the list a checkpoint of its own (--state)',
    );
}
