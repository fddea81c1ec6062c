/**
 * A step's label in words for a terminal. The machine names a drain `drain SOURCES/KINDS` (each a
 * comma-separated list), the name the events and the report's timeline keep; on a progress line or
 * in `status`, `nfs-1,nfs-2/projects,snippets` reads as a path, so the drain is said as what moves
 * from where: "drain projects, snippets from nfs-1, nfs-2". Other steps are shown as they are.
 */

/** The words of a step label, and the shorter form without the verb (null when the step has none). */
export interface StepWords {
  full: string;
  short: string | null;
}

const DRAIN = /^drain ([^/]+)\/([^/]+)$/;

/** "drain nfs-1,nfs-2/projects,groups" -> "drain projects, groups from nfs-1, nfs-2" (pure). */
export function stepWords(step: string): StepWords {
  const m = DRAIN.exec(step);
  if (!m) return { full: step, short: null };
  const list = (s: string) => s.split(',').join(', ');
  const what = `${list(m[2]!)} from ${list(m[1]!)}`;
  return { full: `drain ${what}`, short: what };
}
