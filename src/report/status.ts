/**
 * What `status` shows, built from a checkpoint's saved run and summary: the current step, counts per
 * kind, storage and state, rate and ETA, stuck and quarantined items. One object for `--json`, and
 * its text rendering.
 */
import type { RunContext } from '../machine/types.js';
import type { SavedRun, StatusSummary } from '../store/types.js';
import type { KindProgress } from './summary.js';
import { formatDuration, progressByKind, rateAndEta } from './summary.js';

export interface StatusReport {
  checkpoint: string;
  plan: string | null;
  /** "not started", "running or interrupted", "done", "doneWithQuarantine" or "failed". */
  state: string;
  /** The step the run is in (or ended in), e.g. "drain nfs-1/projects". */
  step: string | null;
  dryRun: boolean;
  error: RunContext['error'];
  kinds: KindProgress[];
  counts: StatusSummary['counts'];
  total: number;
  movesPerMinute: number;
  etaMs: number | null;
  remaining: number;
  stuck: StatusSummary['stuck'];
  quarantined: StatusSummary['quarantined'];
  warnings: string[];
  previousWeights: Record<string, number> | null;
}

/** Builds the status from what the checkpoint holds (pure). */
export function buildStatusReport(checkpoint: string, saved: SavedRun | null, summary: StatusSummary, now: number): StatusReport {
  const snap = saved?.snapshot as { status?: string; value?: unknown; context?: RunContext } | undefined;
  const c = snap?.context;
  let state = 'not started';
  if (snap?.status === 'done') state = String(snap.value);
  else if (snap) state = 'running or interrupted';
  let step: string | null = c?.step ?? null;
  if (c && c.step === 'drain' && snap?.status !== 'done') step = `drain ${c.sources[c.sourceIndex]}/${c.kinds[c.kindIndex]}`;
  // A run younger than the 10-minute window is measured over its own age.
  const rate = rateAndEta(summary, c?.startedAt ? now - c.startedAt : undefined);
  return {
    checkpoint,
    plan: saved?.planName ?? null,
    state,
    step,
    dryRun: c?.dryRun ?? false,
    error: c?.error ?? null,
    kinds: progressByKind(summary),
    counts: summary.counts,
    total: summary.total,
    movesPerMinute: Math.round(rate.perMinute * 10) / 10,
    etaMs: rate.etaMs,
    remaining: rate.remaining,
    stuck: summary.stuck,
    quarantined: summary.quarantined,
    warnings: c?.warnings ?? [],
    previousWeights: c?.previousWeights ?? null,
  };
}

/** The status as text for people. */
export function renderStatus(r: StatusReport): string {
  const lines: string[] = [];
  lines.push(`Plan ${r.plan ?? '(unknown)'}${r.dryRun ? ' (dry run)' : ''}: ${r.state}${r.step ? `, step ${r.step}` : ''}`);
  if (r.error) lines.push(`  failed at ${r.error.step}: ${r.error.message} (${r.error.code})`);
  lines.push(`  ${r.total} items known, ${r.remaining} remaining; ${r.movesPerMinute} moves/min over the last 10 minutes; ETA ${formatDuration(r.etaMs)}`);
  if (r.kinds.length > 0) {
    lines.push('', 'By kind:');
    for (const k of r.kinds) lines.push(`  ${k.kind.padEnd(9)} ${k.done}/${k.total} done, ${k.inFlight} in flight, ${k.waiting} waiting, ${k.quarantined} quarantined`);
    lines.push('', 'By kind, storage and state:');
    for (const c of [...r.counts].sort((a, b) => `${a.kind}${a.source}${a.state}`.localeCompare(`${b.kind}${b.source}${b.state}`))) {
      lines.push(`  ${c.kind.padEnd(9)} ${c.source.padEnd(12)} ${c.state.padEnd(12)} ${c.n}`);
    }
  }
  if (r.stuck.length > 0) {
    lines.push('', `Stuck (${r.stuck.length}):`);
    for (const s of r.stuck) lines.push(`  ${s.kind} ${s.id}: move ${s.moveId} ${s.moveState}${s.readOnly === null ? '' : s.readOnly ? ', read-only' : ', writable'}`);
  }
  if (r.quarantined.length > 0) {
    lines.push('', `Quarantined (${r.quarantined.length}):`);
    for (const q of r.quarantined) lines.push(`  ${q.kind} ${q.id} ${q.name} on ${q.source} after ${q.attempts} attempt(s): ${q.reason}`);
  }
  if (r.warnings.length > 0) {
    lines.push('', `Warnings (${r.warnings.length}):`);
    for (const w of r.warnings) lines.push(`  - ${w}`);
  }
  lines.push('', `Checkpoint: ${r.checkpoint}`);
  return `${lines.join('\n')}\n`;
}
