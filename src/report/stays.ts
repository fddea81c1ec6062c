/**
 * What stays on the sources, in the same words in the final summary, `status` and the HTML report:
 * verification passes "for what this run moves" when items stay (quarantined, not in the reviewed
 * list, not selected, left by `move.until`), each counted and named; "nothing is left" is said only
 * when the instance's listing of every source found nothing of the moved kinds.
 */
import type { StayReason, StaysOutput, VerifyOutput } from '../machine/types.js';
import { listWords } from './counts.js';

/** The staying items named in the terminal's summary and `status`; the rest are counted. */
export const STAYS_SHOWN = 20;

const ORDER: readonly StayReason[] = ['quarantined', 'not in the list', 'not selected', 'move.until'];

function why(reason: StayReason, n: number): string {
  if (reason === 'move.until') return `${n} by move.until`;
  return `${n} ${reason}`;
}

function items(n: number): string {
  return `${n} item${n === 1 ? '' : 's'}`;
}

/** "3 items stay on nfs-1 (2 quarantined, 1 not in the list)", or per source when several hold some. */
export function staysWords(stays: StaysOutput): string {
  const sources = [...new Set(stays.bySource.map((b) => b.source))];
  const reasons = (source: string) =>
    ORDER.flatMap((r) => stays.bySource.filter((b) => b.source === source && b.why === r).map((b) => why(r, b.n))).join(
      ', ',
    );
  const count = (source: string) => stays.bySource.filter((b) => b.source === source).reduce((a, b) => a + b.n, 0);
  const stay = stays.total === 1 ? 'stays' : 'stay';
  if (sources.length === 1) return `${items(stays.total)} ${stay} on ${sources[0]} (${reasons(sources[0]!)})`;
  return `${items(stays.total)} ${stay}: ${sources.map((s) => `${count(s)} on ${s} (${reasons(s)})`).join('; ')}`;
}

/**
 * Verification in one line: FAILED, passed with what stays, or passed with nothing left; a source
 * that could not be listed in full is never said to hold nothing.
 */
export function verificationVerdict(v: VerifyOutput, sources: readonly string[]): string {
  if (!v.ok) return 'FAILED';
  const s = v.stays;
  // A checkpoint from before what stays was recorded: its verification said no more than this.
  if (!s) return 'passed';
  const unlisted = s.listed ? '' : `; not every source could be listed, so what else is there is not known`;
  if (s.total > 0) return `passed for what this run moves; ${staysWords(s)}${unlisted}`;
  if (!s.listed) return `passed for what this run moves${unlisted}`;
  return `passed: nothing of the moved kinds is left on ${listWords([...sources])}`;
}

/** Each staying item, `limit` of them, then where every one is listed. */
export function staysLines(s: StaysOutput | undefined, limit: number, everyOne: string | null): string[] {
  if (!s) return [];
  const out: string[] = [];
  for (const it of s.items.slice(0, limit)) out.push(`  ${it.kind} ${it.id} ${it.path} on ${it.source}: ${it.why}`);
  const more = s.total - Math.min(limit, s.items.length);
  const all = s.items.length >= s.total;
  const where = everyOne ? ` (${all ? 'every one' : `the first ${s.items.length}`}: ${everyOne})` : '';
  if (more > 0) out.push(`  ... and ${more} more${where}`);
  for (const u of s.unlisted ?? []) out.push(`  not listed: ${u}`);
  return out;
}

/** The forward run's items a `revert --only` left on the destination (not in its list, nor an earlier one's). */
export function notInTheList(v: Pick<VerifyOutput, 'stays'> | null | undefined): number {
  return (v?.stays?.bySource ?? []).filter((b) => b.why === 'not in the list').reduce((a, b) => a + b.n, 0);
}
