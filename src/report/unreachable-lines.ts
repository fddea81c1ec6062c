/**
 * The report's lines on projects no per-item move route reaches (hidden or pending deletion on a
 * release before 16.7; src/actors/drain/unreachable.ts): how many, on which source, and the one way
 * they move, or why they stay.
 */
import type { DrainOutput } from '../machine/types.js';

/** One drain's result as the context keeps it. */
type Drain = DrainOutput & { source: string; kind: string };

function projects(n: number): string {
  return `${n} hidden/pending-delete project${n === 1 ? '' : 's'}`;
}

/** The lines for every drain that met such projects (none when no drain did), indented for the report. */
export function unreachableLines(drains: Record<string, Drain>, dry: boolean): string[] {
  const lines: string[] = [];
  for (const d of Object.values(drains)) {
    const u = d.unreachable;
    if (!u || d.perPair) continue;
    const on = u.release ? ` on ${u.release}` : '';
    const why = `${u.release ? `GitLab ${u.release}` : 'this GitLab release'} answers 404 for them on every per-item move route`;
    if (u.by === 'bulk') {
      const verb = dry ? 'would move' : u.items === 1 ? 'moves' : 'move';
      lines.push(`  ${projects(u.items)} ${verb} by the bulk move of ${d.source}${on} (${why})`);
      if (!dry && u.left > 0)
        lines.push(`    ${u.left} of them still on ${d.source}, quarantined: the bulk move did not move them`);
    } else {
      lines.push(
        `  ${projects(u.items)} ${dry ? 'would stay' : u.items === 1 ? 'stays' : 'stay'} on ${d.source}, quarantined: ${why}, and ${u.forbiddenBy ?? 'the plan'} forbids the bulk move of ${d.source} that reaches them`,
        u.forbiddenBy?.startsWith('quarantine')
          ? `    remedy: once the other quarantined projects of ${d.source} are moved or dealt with, run again with --retry-quarantined (the bulk move then takes only these), or upgrade to 16.7 or later (its move routes find them)`
          : `    remedy: move them in a run of their own without ${u.forbiddenBy ?? 'it'}, or upgrade to 16.7 or later (its move routes find them), then run again with --retry-quarantined`,
      );
    }
  }
  return lines.length > 0 ? ['', 'Hidden and pending-delete projects:', ...lines] : [];
}
