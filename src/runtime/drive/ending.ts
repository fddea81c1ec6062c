/**
 * How a drive ends: interrupted (Ctrl-C, a stop from outside), or with the machine final and the
 * report's data gathered, a dry run's estimates among them.
 */
import type { InstanceApi } from '../../api/types.js';
import { isFinalState } from '../../events/vocabulary.js';
import type { RunContext } from '../../machine/types.js';
import type { FinalReportInput } from '../../report/final.js';
import { LEFT_SELECTION_LISTED, leftSelectionOf } from '../../report/left-selection.js';
import { migrationSpan, withThisProcess } from '../../report/span.js';
import { scheduleOf } from '../../schedule/gate.js';
import { isLeaseLostError } from '../../store/lease.js';
import type { CheckpointStore } from '../../store/types.js';
import { noteConsumed, stoppedOutcome } from '../control/stop-run.js';
import type { StopWatch } from '../control/stop.js';
import { assumedCap } from '../auto-estimate.js';
import { autoCapOf } from '../../events/hold.js';
import { autoBounds } from '../../plan/concurrency-field.js';
import { recheckCopies } from '../copies.js';
import { INTERNAL, RuntimeError } from '../errors.js';
import { networksOfRun } from '../status.js';
import type { RunOutcome } from '../types.js';
import type { DriveArgs } from './args.js';

/** What the drive itself knows that its ending reads. */
export interface DriveEnding {
  stop: StopWatch;
  startedAt: number;
}

/** Interrupted: the stopped outcome when a stop from outside was obeyed, else the interrupted one. */
export function interruptedEnding(
  a: DriveArgs,
  e: DriveEnding & { step: string; late: readonly string[] },
): RunOutcome {
  const { opts, store, log } = a;
  const clock = a.services.clock;
  const { stop, step, late, startedAt } = e;
  if (stop.obeyed)
    return stoppedOutcome({
      ...a,
      stop,
      step,
      late,
      elapsedMs: clock.now() - startedAt,
      span: withThisProcess(a.before ?? migrationSpan([], startedAt), startedAt, clock.now()),
    });
  // What the interruption does not stop: GitLab goes on with every move already posted.
  const inFlight = postedMoves(store, clock.now());
  store.appendEvent('run.interrupted', { step, inFlight }, clock.now());
  log.warn({ inFlight }, 'checkpoint saved after interruption; moves posted go on on the instance');
  for (const w of late) opts.stderr.write(`note: ${w}\n`);
  if (!a.leaseLost?.()) noteConsumed(stop, opts);
  return { kind: 'interrupted', inFlight };
}

/** The machine is final: the copies re-checked, the run's end recorded, the report's data gathered. */
export async function finalEnding(
  a: DriveArgs,
  e: DriveEnding & { snap: { value: unknown; context: RunContext }; extraWarnings: string[] },
): Promise<RunOutcome> {
  const { opts, plan, store, log } = a;
  const clock = a.services.clock;
  const { stop, snap, startedAt, extraWarnings } = e;
  if (!a.leaseLost?.()) noteConsumed(stop, opts);
  const state = String(snap.value);
  if (!isFinalState(state)) throw new RuntimeError(INTERNAL, `the run machine stopped in unexpected state ${state}`);
  // Before the copies left behind are listed, where their items live now is read once.
  let copies = null;
  if (!opts.dryRun) {
    try {
      copies = await recheckCopies(store, a.api, {
        destination: snap.context.destination,
        clock,
        signal: opts.signal,
      });
    } catch (err) {
      // A fenced write means the lock was lost: the caller says so. Anything else leaves the
      // copies as the checkpoint records them, said as not re-checked.
      if (isLeaseLostError(err)) throw err;
      log.warn({ err }, 'the copies left behind could not be re-checked');
    }
  }
  const summary = store.summary(clock.now(), true);
  store.appendEvent(
    'run.finished',
    { outcome: state, error: snap.context.error, quarantined: summary.quarantined.length },
    clock.now(),
  );
  log.info({ state, error: snap.context.error, quarantined: summary.quarantined.length }, 'run finished');
  const report: FinalReportInput = {
    state,
    context: snap.context,
    summary,
    elapsedMs: clock.now() - startedAt,
    span: withThisProcess(a.before ?? migrationSpan([], startedAt), startedAt, clock.now()),
    logFile: a.logFile,
    checkpointFile: store.file,
    extraWarnings,
    copies: { checks: copies },
    givenList: store.givenList()?.file ?? null,
    leftSelection: leftSelectionOf(store.leftSelection(LEFT_SELECTION_LISTED)),
    networks: networksOfRun(store, snap.context),
  };
  // The limiter's changes of the cap, every process of the run (a bounded read of the newest).
  if (!opts.dryRun && autoBounds(plan.move.concurrency))
    report.autoCaps = store
      .lastEventsOf(['cap.changed'], AUTO_CAPS_READ)
      .flatMap((ev) => {
        const a = autoCapOf(ev.data);
        return a ? [{ at: ev.at, cap: a.cap, reason: a.reason }] : [];
      })
      .reverse();
  if (opts.dryRun) {
    const assumed = assumedCap(plan, store.file);
    report.estimate = {
      ...estimateSizes(store, snap.context),
      concurrency: assumed.cap,
      ...(assumed.words === null ? {} : { capAssumed: assumed.words }),
      rateLimited: rateLimitedListings(store, snap.context, a.api),
    };
    const schedule = scheduleOf(plan);
    if (schedule) report.schedule = { schedule, now: clock.now() };
  }
  return { kind: 'final', state, report, redact: (text) => a.secrets.scrub(text) };
}

/** The newest recorded caps read for the final report's auto lines. */
const AUTO_CAPS_READ = 1_000;

/** The routes a real run lists page by page, and the key of the limit on each. */
const LISTING_ROUTES: Partial<Record<string, { key: string; route: string }>> = {
  projects: { key: 'projects_api', route: 'GET /projects' },
  groups: { key: 'groups_api', route: 'GET /groups' },
};

/**
 * The listing pages a real run would read on routes the instance limits: each source's items of a
 * kind, 100 a page, listed by the drain and again by verification (GitLab's limits, read from the
 * application settings by the client's pacer).
 */
function rateLimitedListings(store: CheckpointStore, c: RunContext, api: InstanceApi) {
  const limits = api.rateLimits?.() ?? {};
  const out: { route: string; pages: number; budget: number; windowMs: number }[] = [];
  for (const [kind, r] of Object.entries(LISTING_ROUTES)) {
    const limit = r ? limits[r.key] : undefined;
    if (!r || !limit) continue;
    let pages = 0;
    for (const d of Object.values(c.drains)) {
      if (d.kind !== kind) continue;
      const n = Object.values(store.countStates(d.kind, d.source)).reduce((x, y) => x + y, 0);
      pages += 2 * Math.max(1, Math.ceil(n / 100));
    }
    if (pages > 0) out.push({ route: r.route, pages, budget: limit.budget, windowMs: limit.intervalMs });
  }
  return out;
}

/**
 * Known sizes of the pending items the run would move (a reached move.until bound leaves the rest),
 * summed by the store (memory stays flat at any size).
 */
function estimateSizes(store: CheckpointStore, c: RunContext): { bytes: number; sized: number; maxBytes: number } {
  const out = { bytes: 0, sized: 0, maxBytes: 0 };
  for (const d of Object.values(c.drains)) {
    const s = store.movingSizeStats(d.kind, d.source);
    out.bytes += s.bytes;
    out.sized += s.sized;
    out.maxBytes = Math.max(out.maxBytes, s.maxBytes);
  }
  return out;
}

/** Items whose move was posted and not seen to end: in flight, or posted with the answer not yet recorded. */
function postedMoves(store: CheckpointStore, now: number): number {
  return store
    .summary(now)
    .counts.filter((c) => c.state === 'in_flight' || c.state === 'scheduling')
    .reduce((n, c) => n + c.n, 0);
}
