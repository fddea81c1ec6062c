/**
 * What a dry run's estimate assumes about the cap under `move.concurrency: auto`: the knee the
 * real run's limiter found on this instance, when the plan's checkpoint holds one (a run that
 * already drained part of it, or an earlier run of the plan), or the limiter's starting point. The
 * dry run cannot measure throughput (it moves nothing), so it says which it took.
 */
import { existsSync } from 'node:fs';
import { savedKnee } from '../actors/index.js';
import { autoBounds, concurrencyCeiling } from '../plan/concurrency-field.js';
import type { Plan } from '../plan/types.js';
import { openExistingCheckpoint } from './status.js';

/** The cap an estimate assumes, and the words that say why under `auto` (null: a fixed cap). */
export interface AssumedCap {
  cap: number;
  words: string | null;
}

/** The real run's checkpoint beside a dry run's (`x.dry-run.db` -> `x.db`), or null. */
function realRunFile(dryRunFile: string): string | null {
  return dryRunFile.endsWith('.dry-run.db') ? `${dryRunFile.slice(0, -'.dry-run.db'.length)}.db` : null;
}

/** The knee kept in the checkpoint at `file`, or null (none, no file, or not readable now). */
function kneeIn(file: string): number | null {
  if (!existsSync(file)) return null;
  try {
    const store = openExistingCheckpoint(file, { readOnly: true });
    try {
      return savedKnee(store);
    } finally {
      store.close();
    }
  } catch {
    // A checkpoint that cannot be read now (locked past its busy timeout, damaged) has no knee to give.
    return null;
  }
}

/** The cap the dry run of `plan` (its checkpoint at `dryRunFile`) estimates with. */
export function assumedCap(plan: Plan, dryRunFile: string): AssumedCap {
  const bounds = autoBounds(plan.move.concurrency);
  if (!bounds) return { cap: concurrencyCeiling(plan.move.concurrency), words: null };
  const real = realRunFile(dryRunFile);
  const knee = real === null ? null : kneeIn(real);
  if (knee !== null) {
    const cap = Math.max(bounds.min, Math.min(bounds.max, knee));
    return {
      cap,
      words: `move.concurrency: auto: assumes ${cap}, the knee the last run found on this instance (${real})`,
    };
  }
  return {
    cap: bounds.min,
    words: `move.concurrency: auto: assumes ${bounds.min}, the limiter's starting point (min); a real run raises the cap while throughput grows, up to ${bounds.max}, so it may well end sooner`,
  };
}
