/**
 * `run --metrics-file PATH`: the run's metrics in node_exporter's textfile-collector format,
 * rewritten after every poll (and at most every few hundred milliseconds), and once more at the end,
 * when the file says how the run ended (./run-metrics.ts). Each write goes to a new temporary file in
 * the same directory (../files/atomic.ts), then is renamed over PATH, so the collector never reads
 * half a file. The temporary name does not end in `.prom`, so the collector never picks it up either.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CapData } from '../events/vocabulary.js';
import { writeFileAtomic } from '../files/atomic.js';
import { copiesOf } from '../report/copies.js';
import type { CopyKnowledge } from '../report/copies.js';
import { holdOf } from '../events/hold.js';
import { isMoveEvent, MoveLedger } from '../report/moves.js';
import type { ObservedRun, RunObserver } from '../runtime/observe/observer.js';
import type { Timer } from '../shared/clock.js';
import { findSamePlanFiles } from './neighbours.js';
import type { RunOutcome } from './run-metrics.js';
import { RunMetrics } from './run-metrics.js';

/** Events read per refresh: a resumed run with a long backlog catches up over a few refreshes. */
const EVENTS_PER_REFRESH = 20_000;
/** Rewritten at least this often even when nothing moves (paused, verifying), so the step, ETA and heartbeat stay current. */
const KEEPALIVE_MS = 15_000;

/** The outcome label of a final state. */
const OUTCOME_OF_STATE: Record<string, RunOutcome> = {
  done: 'done',
  doneWithQuarantine: 'done_with_quarantine',
  failed: 'failed',
};

export interface MetricsFileOptions {
  /** Told once about the first failed write (a full disk must not fail the migration). */
  onError?: (err: unknown) => void;
  /** Told about a problem the run goes on with (another file in the folder carries this plan's series). */
  onWarning?: (message: string) => void;
  /** The command that drives the run (default `run`): a revert's series are its own. */
  command?: 'run' | 'revert';
}

/**
 * The `plan` label of a run's series: the plan's name, with the suffix its checkpoint has for a dry
 * run (`<name>.dry-run`) or a revert (`<name>.revert`), so that their files never collide with the
 * run's own in one textfile folder.
 */
export function planLabelOf(name: string, dryRun: boolean, command: 'run' | 'revert' = 'run'): string {
  if (command === 'revert') return `${name}.revert`;
  return dryRun ? `${name}.dry-run` : name;
}

/** The observer that keeps `file` current; see RunObserver. */
export function createMetricsFileObserver(
  file: string,
  opts: MetricsFileOptions = {},
): RunObserver & { readonly metrics: RunMetrics | null } {
  let metrics: RunMetrics | null = null;
  const ledger = new MoveLedger();
  let run: ObservedRun | null = null;
  let afterSeq = 0;
  let cap: CapData | null = null;
  /** The run's last re-check of where items with copies left behind live (event copies.checked). */
  let checks: CopyKnowledge['checks'] = null;
  /** How the run ended, from its own events (run.finished, run.interrupted, run.stopped); null while it goes on. */
  let outcome: RunOutcome | null = null;
  let ending = false;
  let gapMs = 1000;
  let lastWrite = 0;
  let trailing: Timer | null = null;
  let keepalive: Timer | null = null;
  let writing: Promise<void> = Promise.resolve();
  let reported = false;

  /** Folds the new events and the current summary into the metrics. */
  const refresh = (r: ObservedRun, m: RunMetrics, end: boolean) => {
    const events = r.store.readEvents(afterSeq, EVENTS_PER_REFRESH);
    for (const e of events) {
      afterSeq = e.seq;
      if (e.type === 'cap.changed') cap = e.data;
      if (e.type === 'copies.checked') checks = { at: e.at, checks: e.data.checks };
      if (e.type === 'run.finished') outcome = OUTCOME_OF_STATE[e.data.outcome] ?? 'error';
      if (e.type === 'run.interrupted') outcome = 'interrupted';
      if (e.type === 'run.stopped') outcome = 'stopped';
      if (!isMoveEvent(e)) continue;
      const ended = ledger.add(e);
      if (!ended) continue;
      // A move that started before this process: its start is the item row's first sighting.
      if (ended.startAt === null) ended.startAt = r.store.getItem(ended.kind, ended.itemId)?.scheduledAt ?? null;
      m.moveEnded(ended, r.instanceVersion?.() ?? null);
    }
    ledger.dropEnded();
    const now = r.clock.now();
    // The last write reads every event left: the outcome is the run's last one.
    if (end && events.length === EVENTS_PER_REFRESH) return refresh(r, m, end);
    // No end of its own recorded: the lock was lost to another runner, or an internal error ended it.
    if (end) m.end(outcome ?? 'error', now);
    const summary = r.store.summary(now);
    // The run's one destination, for rows that do not record theirs (bulk drains, older checkpoints).
    const destination = r.plan.move.to.length === 1 ? r.plan.move.to[0]! : null;
    // The progress line's pace: this process's rate, none until enough of its moves ended.
    const hold = holdOf(cap, r.store.readControl());
    const held = hold?.stopped ?? false;
    m.setGauges({
      hold,
      summary,
      copies: copiesOf(summary, { destination, checks }).left,
      storages: { sources: r.plan.move.from, destinations: r.plan.move.to },
      cap,
      pace: r.pace.read(now, summary, held),
      step: r.step(),
      dryRun: r.dryRun,
      startedAt: r.startedAt,
      stays: r.stays?.()?.bySource ?? null,
      migrationStartedAt: r.before?.startedAt ?? r.startedAt,
      activeMs: (r.before?.activeMs ?? 0) + Math.max(0, now - r.startedAt),
      now,
    });
  };

  const write = (): Promise<void> => {
    if (!run || !metrics) return writing;
    const r = run;
    const m = metrics;
    const end = ending;
    lastWrite = r.clock.now();
    // One write at a time: the renames land in the order the snapshots were taken.
    writing = writing.then(async () => {
      try {
        refresh(r, m, end);
        // Readable by node_exporter's textfile collector, which usually runs as another user.
        writeFileAtomic(file, await m.render(), { mode: 0o644 });
      } catch (err) {
        if (!reported) opts.onError?.(err);
        reported = true;
      }
    });
    return writing;
  };

  /** At most one write per gap; a call inside the gap schedules one at its end, so the last poll is never lost. */
  const throttled = () => {
    if (!run || trailing || ending) return;
    const clock = run.clock;
    const wait = lastWrite + gapMs - clock.now();
    if (wait <= 0) {
      void write();
      return;
    }
    trailing = clock.setTimeout(() => {
      trailing = null;
      void write();
    }, wait);
    trailing.unref();
  };

  return {
    get metrics() {
      return metrics;
    },
    started(r) {
      run = r;
      const plan = planLabelOf(r.plan.name, r.dryRun, opts.command);
      metrics = new RunMetrics(plan);
      // Counters count what happens from now on: moves that ended before this process are not replayed.
      afterSeq = r.store.lastEventSeq();
      // The cap in force until this process records its own: the last one the checkpoint holds.
      cap = r.store.lastEventOf(['cap.changed'])?.data ?? null;
      const lastCheck = r.store.lastEventOf(['copies.checked']);
      checks = lastCheck ? { at: lastCheck.at, checks: lastCheck.data.checks } : null;
      gapMs = Math.max(250, Math.min(r.plan.poll.intervalMs, 5_000));
      mkdirSync(dirname(file), { recursive: true });
      for (const other of findSamePlanFiles(file, plan))
        opts.onWarning?.(
          `${other} in the same folder also has series of plan ${plan}: node_exporter cannot gather both ` +
            `(one of them is dropped at every scrape). Remove it, or give this run a file in another folder`,
        );
      void write();
      keepalive = r.clock.setInterval(() => {
        if (r.clock.now() - lastWrite >= KEEPALIVE_MS) void write();
      }, KEEPALIVE_MS);
      keepalive.unref();
    },
    progress: throttled,
    response(e) {
      if (run && metrics) metrics.response(e, run.clock.now());
    },
    async stopped() {
      run?.clock.clearTimeout(trailing);
      run?.clock.clearInterval(keepalive);
      trailing = null;
      ending = true;
      await write();
      run = null;
    },
  };
}
