/**
 * A destination's room in words, the same wherever a hold by room is told (the rule's recorded
 * reason, the progress line, `status`, notifications): bytes as people read them beside the plan's
 * `capacity.keep_free`, never Prometheus's float and label set. The run watches the room as a pause
 * rule named `capacity:<storage>` (runtime/run.ts).
 */
import { formatBytes } from '../plan/capacity-field.js';

/** The prefix of the rule that watches a destination's room: `capacity:<storage>`. */
export const CAPACITY_RULE = 'capacity:';

/** "451.4 GiB free, below keep_free 500.0 GiB". */
export function roomWords(freeBytes: number, keepFreeBytes: number): string {
  return `${formatBytes(freeBytes)} free, below keep_free ${formatBytes(keepFreeBytes)}`;
}

/** roomWords' words for a narrow line: "451.4 GiB free < 500.0 GiB"; other text as it is. */
export function roomBrief(words: string): string {
  return words.replace(/ free, below keep_free /, ' free < ');
}

/**
 * The room of a reason recorded before it was said in bytes (`4.847e+11 {mountpoint="/"} below
 * 5.369e+11`), in roomWords' words; the reason as it is otherwise.
 */
export function roomOfRecorded(reason: string): string {
  const m = /^(\S+)(?: \{.*\})? below (\S+)$/.exec(reason);
  const free = m ? Number(m[1]) : Number.NaN;
  const keep = m ? Number(m[2]) : Number.NaN;
  return Number.isFinite(free) && Number.isFinite(keep) ? roomWords(free, keep) : reason;
}

/**
 * What an operator can do about a destination out of room, with the run's own control command
 * (`control`: `shardmove control PLAN [--state FILE]`, as pasteable as the run's was given).
 */
export function roomNextStep(storage: string, control: string): string {
  return (
    `free space on ${storage} (the run goes on by itself once it is above keep_free), ` +
    `or lower capacity.keep_free in the plan, stop the run (\`${control} --stop\`) and run it again with --accept-plan-change`
  );
}
