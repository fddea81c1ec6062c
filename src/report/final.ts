/**
 * The report printed when a run ends (or is found already ended): steps, counts per kind,
 * quarantined items with reasons, verification, previous and new weights, warnings; in a dry run,
 * the estimate and "nothing was changed". Pure text from data.
 */
import type { GeoOutput, RunContext } from '../machine/types.js';
import type { StatusSummary } from '../store/types.js';
import { estimateDuration } from './estimate.js';
import type { EstimateInput } from './estimate.js';
import { formatBytes, formatApproxDuration, progressByKind } from './summary.js';

export interface FinalReportInput {
  /** The machine's final state value. */
  state: 'done' | 'doneWithQuarantine' | 'failed' | string;
  context: RunContext;
  summary: StatusSummary;
  elapsedMs: number;
  /** Dry run only: what is known about the sizes of the items that would move (see ./estimate.ts). */
  estimate?: Omit<EstimateInput, 'items'>;
  logFile?: string;
  checkpointFile?: string;
  /** Warnings the runtime raised while running (e.g. the token expiring before the estimated end). */
  extraWarnings?: string[];
}

const HEADLINE: Record<string, string> = {
  done: 'DONE: every repository moved and verified',
  doneWithQuarantine: 'DONE WITH QUARANTINED ITEMS: everything else moved and verified',
  failed: 'FAILED',
};

function weights(w: Record<string, number> | null): string {
  if (!w) return 'unknown';
  return Object.entries(w).map(([k, v]) => `${k}=${v}`).join(', ') || '(none)';
}

/** The final report as plain text lines. */
export function renderFinalReport(input: FinalReportInput): string {
  const { context: c, summary } = input;
  const lines: string[] = [];
  const dry = c.dryRun;
  lines.push(dry ? `DRY RUN ${input.state === 'failed' ? 'FAILED' : 'COMPLETE'}: nothing was changed on the instance` : HEADLINE[input.state] ?? input.state);
  if (c.error) lines.push(`  step: ${c.error.step}`, `  cause: ${c.error.message} (${c.error.code})`);
  lines.push(`  took ${formatApproxDuration(input.elapsedMs)}${c.instanceVersion ? `, instance version ${c.instanceVersion}` : ''}`);

  const kinds = progressByKind(summary);
  if (dry) {
    lines.push('', 'Would move:');
    for (const d of Object.values(c.drains)) lines.push(`  ${d.kind} on ${d.source}: ${d.remaining}`);
    if (Object.keys(c.drains).length === 0) for (const p of kinds) lines.push(`  ${p.kind}: ${p.total}`);
    const total = kinds.reduce((a, p) => a + p.total - p.done - p.quarantined, 0);
    if (input.estimate) {
      const e = input.estimate;
      lines.push(`  known size: ${formatBytes(e.bytes)} in ${e.sized} of ${total} items`);
      const est = estimateDuration({ ...e, items: total });
      lines.push(`  estimated duration: ${formatApproxDuration(est.ms)} at ${e.concurrency} moves in flight`, `    (${est.assumptions})`);
    }
    lines.push(`  weights now: ${weights(c.previousWeights)}`, `  weights after: ${weights(c.newWeights)}`);
  } else {
    lines.push('', 'Repositories:');
    for (const p of kinds) {
      lines.push(`  ${p.kind}: ${p.done} moved of ${p.total}, ${p.quarantined} quarantined${p.waiting + p.inFlight > 0 ? `, ${p.waiting + p.inFlight} not finished` : ''}`);
    }
    if (kinds.length === 0) lines.push('  (none enumerated)');
    if (summary.quarantined.length > 0) {
      lines.push('', `Quarantined (${summary.quarantined.length}):`);
      for (const q of summary.quarantined) lines.push(`  ${q.kind} ${q.id} ${q.name} on ${q.source} after ${q.attempts} attempt(s): ${q.reason}`);
    }
    if (c.verification) {
      lines.push('', `Verification: ${c.verification.ok ? 'passed' : 'FAILED'}`);
      for (const p of c.verification.problems) lines.push(`  ${p}`);
    } else if (!c.verify) {
      lines.push('', 'Verification: skipped (plan: verify false)');
    }
    if (c.geo) lines.push(...geoLines(c.geo));
    lines.push('', `Weights before: ${weights(c.previousWeights)}`, `Weights now:    ${weights(c.newWeights)}`);
    if (c.weightsWritten && c.previousWeights) lines.push('  (to roll back: `shardmove weights restore PLAN` puts the "before" values back)');
  }
  const warnings = [...c.warnings, ...(input.extraWarnings ?? [])];
  if (warnings.length > 0) {
    lines.push('', `Warnings (${warnings.length}):`);
    for (const w of warnings) lines.push(`  - ${w}`);
  }
  if (input.checkpointFile) lines.push('', `Checkpoint: ${input.checkpointFile}`);
  if (input.logFile) lines.push(`Log: ${input.logFile}`);
  if (input.state === 'failed') lines.push('Fix the cause and run the same command again: the run resumes from its checkpoint.');
  return `${lines.join('\n')}\n`;
}

/**
 * The Geo step per secondary site. A checkpoint written before issue 13 holds `{ results }` from
 * one call to the primary instead of `sites`: it is shown as that, not as a per-site outcome.
 */
function geoLines(geo: GeoOutput): string[] {
  const legacy = geo as unknown as { sites?: unknown; results?: { registryClass: string }[] };
  if (!Array.isArray(legacy.sites)) {
    return [`Geo resync requested from the primary only for ${(legacy.results ?? []).map((r) => r.registryClass).join(', ')} (before per-site resync)`];
  }
  const lines = ['', 'Geo resync:'];
  if (geo.sites.length === 0) lines.push('  nothing requested: no Geo secondary');
  for (const s of geo.sites) {
    const site = `"${s.name}" (site ${s.siteId})`;
    if (s.error !== null) {
      lines.push(`  ${site}: FAILED: ${s.error}`);
      continue;
    }
    const refused = s.results.filter((r) => r.errors.length > 0);
    const accepted = s.results.filter((r) => r.errors.length === 0).map((r) => r.registryClass);
    lines.push(`  ${site}: requested for ${accepted.length > 0 ? accepted.join(', ') : 'nothing'}`);
    for (const r of refused) lines.push(`    refused ${r.registryClass}: ${r.errors.join('; ')}`);
  }
  return lines;
}
