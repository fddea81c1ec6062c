/**
 * What `status` shows, built from a checkpoint's saved run and summary: the current step, counts per
 * kind, storage and state, rate and ETA, stuck and quarantined items. One object for `--json`, and
 * its text rendering.
 */
import type { AuditEventOf, CapData } from '../events/vocabulary.js';
import type { RunContext } from '../machine/types.js';
import { NO_CONTROL } from '../store/types.js';
import type { RunControl, SavedRun, StatusSummary } from '../store/types.js';
import type { KindProgress } from './summary.js';
import { copiesLines, copiesOf } from './copies.js';
import type { CopyKnowledge, LeftCopy, LiveCopy } from './copies.js';
import { describeFailure } from './failure-class.js';
import type { FailureClass } from './failure-class.js';
import { formatApproxDuration, placementLines, progressByKind, rateAndEta } from './summary.js';

/** The run lock as `status` found it: who holds it and whether that process is alive. */
export interface LockView {
  pid: number;
  host: string;
  startedAt: number;
  /** Alive on this host; null when the holder is on another host (it cannot be probed from here). */
  alive: boolean | null;
  /** The holder's last heartbeat and lease period (run lock lease, schema 8); absent on older checkpoints. */
  heartbeatAt?: number;
  leaseMs?: number | null;
  generation?: number;
}

export interface StatusReport {
  checkpoint: string;
  plan: string | null;
  /**
   * "not started", "running" (a live process holds the lock), "interrupted" (no live holder and the
   * machine did not reach a final state: killed, stopped by a signal, or crashed), or the final state:
   * "done", "doneWithQuarantine", "failed".
   */
  state: string;
  /** The process holding the run lock, if any (a dead holder means the run was killed). */
  lock: LockView | null;
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
  /** Each with its failure class and that class's remedy (./failure-class.ts, docs/failures.md). */
  quarantined: (StatusSummary['quarantined'][number] & { class: FailureClass; remedy: string; doc: string })[];
  /**
   * Repository copies left behind for the operator to remove once checked (./copies.ts): on the
   * storage a moved item left (cleanup failed, failed after the switch), or on the destination of
   * a failed move; `source` is the storage the copy is on, with its paths there (hashed storage,
   * relative to the storage's path) and where the item lives, and how that is known.
   */
  orphans: LeftCopy[];
  /** Copies that would be listed but are on the storage their item lives on now: live, never to remove. */
  liveCopies: LiveCopy[];
  /** Items and bytes per destination (issue 23); empty when nothing was placed per item. */
  placement: NonNullable<StatusSummary['placement']>;
  warnings: string[];
  previousWeights: Record<string, number> | null;
  /** The operator's live overrides (`shardmove control`) and the plan's own cap. */
  control: RunControl & { planConcurrency: number | null };
  /**
   * The cap in force as the run recorded it last (operator, pause, maintenance windows, throttle):
   * what caps the run now and why; null before a drain looked.
   */
  cap: CapView | null;
}

/** The cap in force as the run last recorded it, and since when. */
export interface CapView extends CapData {
  /** When it was recorded (ms since epoch). */
  at: number;
}

/** The cap view from the run's last `cap.changed` event. */
export function capView(e: AuditEventOf<'cap.changed'> | null): CapView | null {
  if (!e) return null;
  const { previous: _previous, ...cap } = e.data;
  return { ...cap, at: e.at };
}

function describeCap(c: CapView): string {
  const since = new Date(c.at).toISOString();
  switch (c.limit) {
    case 'window':
      return c.cap === 0
        ? `WAITING: outside every maintenance window; nothing new is scheduled until ${c.until == null ? 'a window opens' : new Date(c.until).toISOString()}`
        : `cap ${c.cap} of ${c.ceiling}: ${c.reason} (since ${since})`;
    case 'rule':
      return `HELD by ${c.rule ? `rule ${c.rule}` : 'a throttle rule'}: cap 0 of ${c.ceiling}: ${c.reason} (since ${c.since != null ? new Date(c.since).toISOString() : since})`;
    case 'throttle':
      return `throttle: cap ${c.cap} of ${c.ceiling}: ${c.reason} (since ${since})`;
    case 'paused':
      return `cap 0: ${c.reason} (since ${since})`;
    case 'control':
    case 'plan':
      return `cap ${c.cap}: ${c.reason} (since ${since})`;
  }
}

/** Live, interrupted or ended: a live lock holder wins (a resumed run starts from an old final snapshot). */
function runState(snap: { status?: string; value?: unknown } | undefined, lock: LockView | null): string {
  if (lock && lock.alive !== false) return 'running';
  if (snap?.status === 'done') return String(snap.value);
  return snap ? 'interrupted' : 'not started';
}

/** Builds the status from what the checkpoint holds (pure); `lock` is the lock row with its liveness. */
export function buildStatusReport(
  checkpoint: string,
  saved: SavedRun | null,
  summary: StatusSummary,
  now: number,
  lock: LockView | null = null,
  /** The plan's `move.concurrency`, when the caller loaded the plan (the checkpoint does not keep it). */
  planConcurrency: number | null = null,
  cap: CapView | null = null,
  /** What is known beyond the checkpoint's rows of where items with copies left behind live (./copies.ts). */
  copies: CopyKnowledge = {},
): StatusReport {
  const snap = saved?.snapshot as { status?: string; value?: unknown; context?: RunContext } | undefined;
  const c = snap?.context;
  const state = runState(snap, lock);
  let step: string | null = c?.step ?? null;
  if (c && c.step === 'drain' && snap?.status !== 'done')
    step = `drain ${c.sources[c.sourceIndex]}/${c.kinds[c.kindIndex]}`;
  // A run younger than the 10-minute window is measured over its own age.
  const rate = rateAndEta(summary, c?.startedAt ? now - c.startedAt : undefined);
  const view = copiesOf(summary, { destination: c?.destination ?? null, ...copies });
  return {
    checkpoint,
    plan: saved?.planName ?? null,
    state,
    lock,
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
    quarantined: summary.quarantined.map((q) => {
      const { class: cls, remedy, doc } = describeFailure(q.reason, c?.instanceVersion ?? null);
      return { ...q, class: cls, remedy, doc };
    }),
    orphans: view.left,
    liveCopies: view.live,
    placement: summary.placement ?? [],
    warnings: c?.warnings ?? [],
    previousWeights: c?.previousWeights ?? null,
    control: { ...(summary.control ?? NO_CONTROL), planConcurrency },
    cap,
  };
}

/** "concurrency 5 (plan: 10)", "concurrency 10 (the plan's)", or the same after "paused: ...". */
export function describeControl(c: StatusReport['control']): string {
  const planCap = c.planConcurrency === null ? "the plan's" : String(c.planConcurrency);
  const cap =
    c.concurrency === null
      ? `concurrency ${planCap}${c.planConcurrency === null ? '' : " (the plan's)"}`
      : `concurrency ${c.concurrency} (plan: ${planCap})`;
  if (!c.paused) return cap;
  return `${c.pausedBy ?? 'paused'}: no new moves, moves in flight are followed to their end; ${cap} when unpaused`;
}

/** The status as text for people. */
export function renderStatus(r: StatusReport): string {
  const lines: string[] = [];
  lines.push(
    `Plan ${r.plan ?? '(unknown)'}${r.dryRun ? ' (dry run)' : ''}: ${r.state}${r.step ? `, step ${r.step}` : ''}`,
  );
  const l = r.lock;
  if (l && l.alive === true)
    lines.push(`  running as pid ${l.pid} on ${l.host} since ${new Date(l.startedAt).toISOString()}`);
  else if (l && l.alive === null)
    lines.push(
      `  locked by pid ${l.pid} on ${l.host} since ${new Date(l.startedAt).toISOString()} (another host: cannot tell from here whether it still runs)`,
    );
  else if (l)
    lines.push(
      `  interrupted: pid ${l.pid} on ${l.host} died holding the lock (killed or crashed); \`run\` again to continue`,
    );
  else if (r.state === 'interrupted') lines.push('  interrupted: no process is running it; `run` again to continue');
  if (r.error) lines.push(`  failed at ${r.error.step}: ${r.error.message} (${r.error.code})`);
  if (r.control.paused || r.control.concurrency !== null) lines.push(`  control: ${describeControl(r.control)}`);
  if (
    r.cap &&
    r.state === 'running' &&
    (r.cap.limit === 'window' || r.cap.limit === 'rule' || r.cap.limit === 'throttle')
  )
    lines.push(`  ${describeCap(r.cap)}`);
  lines.push(
    `  ${r.total} items known, ${r.remaining} remaining; ${r.movesPerMinute} moves/min over the last 10 minutes; ETA ${formatApproxDuration(r.etaMs)}`,
  );
  if (r.kinds.length > 0) {
    lines.push('', 'By kind:');
    for (const k of r.kinds) {
      lines.push(
        `  ${k.kind.padEnd(9)} ${k.done}/${k.total} done, ${k.inFlight} in flight, ${k.waiting} waiting (${k.retrying} failed, retrying), ${k.quarantined} quarantined`,
      );
    }
    lines.push('', 'By kind, storage and state:');
    for (const c of [...r.counts].sort((a, b) =>
      `${a.kind}${a.source}${a.state}`.localeCompare(`${b.kind}${b.source}${b.state}`),
    )) {
      lines.push(`  ${c.kind.padEnd(9)} ${c.source.padEnd(12)} ${c.state.padEnd(12)} ${c.n}`);
    }
  }
  if (r.stuck.length > 0) {
    lines.push('', `Stuck (${r.stuck.length}):`);
    for (const s of r.stuck)
      lines.push(
        `  ${s.kind} ${s.id}: move ${s.moveId} ${s.moveState}${s.readOnly === null ? '' : s.readOnly ? ', read-only' : ', writable'}`,
      );
  }
  if (r.quarantined.length > 0) {
    lines.push('', `Quarantined (${r.quarantined.length}):`);
    for (const q of r.quarantined) {
      lines.push(`  ${q.kind} ${q.id} ${q.name} on ${q.source} after ${q.attempts} attempt(s): ${q.reason}`);
      lines.push(`    ${q.class}: ${q.remedy} (${q.doc})`);
    }
  }
  lines.push(...placementLines(r.placement, r.dryRun));
  lines.push(...copiesLines({ left: r.orphans, live: r.liveCopies }));
  if (r.warnings.length > 0) {
    lines.push('', `Warnings (${r.warnings.length}):`);
    for (const w of r.warnings) lines.push(`  - ${w}`);
  }
  lines.push('', `Checkpoint: ${r.checkpoint}`);
  return `${lines.join('\n')}\n`;
}
