/**
 * The cap in force: how many moves may be in flight right now, as one value. The operator's cap
 * (the plan's `move.concurrency`, or `shardmove control`'s override, 0 while paused) is the ceiling;
 * the scheduling gate lowers it (0 outside every maintenance window, the throttle's cap under load).
 * A stop request (`shardmove control --stop`, the stop file) makes it 0 as well, above everything.
 * The drain computes it at every turn of its loop and records every change as a `cap.changed`
 * audit event; `--events`, the metrics file, the progress line, `status` and the report all show
 * that recorded value, so they cannot disagree.
 */
import type { CapData } from '../events/vocabulary.js';
import type { RunControl } from '../store/types.js';
import { concurrencyCeiling, describeConcurrency } from '../plan/concurrency-field.js';
import { autoCap } from './auto-cap.js';
import type { ActorDeps } from './types.js';
import type { GateStore } from '../store/views.js';

/** The cap in force, and what the loop also needs: the live control, and when a closed window reopens. */
export interface CapDecision extends CapData {
  control: RunControl;
  waitingUntil: number | null;
}

/** The last cap recorded by each run (one ActorDeps<GateStore> per run process). */
const recorded = new WeakMap<ActorDeps<GateStore>, CapData>();

/** The cap this run recorded last (null before its first drain looked). */
export function lastCap(deps: ActorDeps<GateStore>): CapData | null {
  return recorded.get(deps) ?? null;
}

/**
 * The operator's cap: the plan's (under `move.concurrency: auto`, the limiter's), `shardmove
 * control`'s override, or 0 while paused or stopping. The limiter is told of an override, a pause
 * and a stop (a cap it does not choose), so that it judges no window they shaped.
 */
function operatorCap(deps: ActorDeps<GateStore>, control: RunControl): CapData {
  const planCap = deps.plan.move.concurrency;
  const held = control.stop || control.paused ? 0 : control.concurrency;
  const auto = autoCap(deps, held);
  if (control.stop)
    return {
      cap: 0,
      ceiling: 0,
      paused: control.paused,
      limit: 'stopping',
      reason:
        control.stop.by === 'file'
          ? 'stopping: the stop file asks for it; the run ends once nothing is in flight'
          : control.stop.by === 'console'
            ? 'stopping: the console asks for it; the run ends once nothing is in flight'
            : 'stopping: shardmove control --stop asks for it; the run ends once nothing is in flight',
    };
  if (control.paused)
    return {
      cap: 0,
      ceiling: 0,
      paused: true,
      limit: 'paused',
      reason: control.pausedBy ?? 'paused with shardmove control',
    };
  if (control.concurrency !== null) {
    return {
      cap: control.concurrency,
      ceiling: control.concurrency,
      paused: false,
      limit: 'control',
      reason: `set with shardmove control (the plan says ${describeConcurrency(planCap)})`,
    };
  }
  if (auto) return { cap: auto.cap, ceiling: auto.cap, paused: false, limit: 'plan', reason: auto.reason };
  const fixed = concurrencyCeiling(planCap);
  return { cap: fixed, ceiling: fixed, paused: false, limit: 'plan', reason: "the plan's move.concurrency" };
}

/**
 * Moves allowed in flight for this turn of the scheduling loop, recorded when it changed. Read from
 * the checkpoint at every turn, so an operator's change takes effect within one poll interval.
 * Nothing in flight is affected: a cap below the moves in flight only stops new ones.
 */
export async function capInForce(deps: ActorDeps<GateStore>): Promise<CapDecision> {
  let control = deps.store.readControl();
  let cap = operatorCap(deps, control);
  // An instance that does not answer starts nothing new; only a stop says more.
  const outage = outages.get(deps);
  if (outage && cap.limit !== 'stopping') return decided(deps, outageCap(cap, control, outage), control, null);
  let waitingUntil: number | null = null;
  if (deps.gate && cap.cap > 0) {
    const d = await deps.gate.decide(cap.ceiling, deps.clock.now());
    // A stop asked for while the gate was consulted holds at once: the caller launches in this same
    // tick, so nothing starts after the run saw a stop (the stop watcher counts what did before).
    const now = deps.store.readControl();
    if (now.stop) return decided(deps, operatorCap(deps, now), now, null);
    control = now;
    waitingUntil = d.waitingUntil;
    if (d.limit !== null && d.cap < cap.ceiling) {
      cap = {
        ...cap,
        cap: d.cap,
        limit: d.limit,
        reason: d.reason ?? d.limit,
        ...(d.limit === 'window' ? { until: d.waitingUntil } : {}),
        ...(d.limit === 'rule' && d.rule ? { rule: d.rule.name, since: d.rule.since } : {}),
      };
    }
  }
  cap = rateLimited(deps, cap);
  return decided(deps, cap, control, waitingUntil);
}

/**
 * While the instance's application rate limit holds this process's reads (`GET /projects` waits
 * for its window), nothing new starts: the hold is a cap of 0 (`ratelimit`) until its end, in the
 * same words as any hold. A pause, a stop or a closed window says more and stays.
 */
function rateLimited(deps: ActorDeps<GateStore>, cap: CapData): CapData {
  const hold = deps.api.rateHold?.() ?? null;
  if (hold === null || hold.until <= deps.clock.now() || cap.cap === 0) return cap;
  return { cap: 0, ceiling: cap.ceiling, paused: false, limit: 'ratelimit', reason: hold.reason, until: hold.until };
}

/**
 * Records the rate limit's hold (or its end) when no loop turns to record it: a listing or a
 * read that waits for its window before the drain's loop runs. The next turn of a loop decides
 * the same (`capInForce` reads the same hold).
 */
export function recordRateHold(deps: ActorDeps<GateStore>): void {
  const control = deps.store.readControl();
  const previous = recorded.get(deps) ?? null;
  // Only over the operator's cap or a hold of its own: a loop's gate (a window, a rule) stays its own.
  if (previous && previous.limit !== 'plan' && previous.limit !== 'control' && previous.limit !== 'ratelimit') return;
  const cap = rateLimited(deps, operatorCap(deps, control));
  // Nothing to say unless a hold starts, changes or ends.
  if (cap.limit !== 'ratelimit' && previous?.limit !== 'ratelimit') return;
  record(deps, cap);
}

/**
 * While a bulk move's job waits in Sidekiq's queue the drain starts nothing and waits with it: the
 * hold is recorded as a cap of 0 (`queue`), in `reason`'s words; null records the operator's cap
 * again once the job left the queue (the next turn of a loop records the gate's).
 */
export function recordQueueHold(deps: ActorDeps<GateStore>, reason: string | null): void {
  const control = deps.store.readControl();
  const cap = operatorCap(deps, control);
  // A pause or a stop says more than the queue does, and stays what the run shows.
  if (reason === null || cap.limit === 'paused' || cap.limit === 'stopping') record(deps, cap);
  else record(deps, { cap: 0, ceiling: cap.ceiling, paused: false, limit: 'queue', reason });
  // A stop is not marked as seen here: a stop follows the bulk job, which cannot be called back,
  // to its end (README, exit 6), however long it waits in the queue; Ctrl-C ends the run at once.
}

/** The outage each run holds for now (api/outage.ts), set and cleared by `recordOutageHold`. */
const outages = new WeakMap<ActorDeps<GateStore>, { reason: string; since: number }>();

function outageCap(cap: CapData, control: RunControl, outage: { reason: string; since: number }): CapData {
  return {
    cap: 0,
    ceiling: cap.ceiling,
    paused: control.paused,
    limit: 'outage',
    reason: outage.reason,
    since: outage.since,
  };
}

/**
 * The instance stopped answering (`outage`: in words, and since when) or answers again (null): the
 * hold is recorded at once, as a cap of 0 (`outage`), though the drain waits inside a request and
 * does not turn; while it lasts every turn decides the same. A stop says more and stays what the run
 * shows; the end records the operator's cap again (the next turn records the gate's).
 */
export function recordOutageHold(deps: ActorDeps<GateStore>, outage: { reason: string; since: number } | null): void {
  if (outage) outages.set(deps, outage);
  else outages.delete(deps);
  const control = deps.store.readControl();
  const cap = operatorCap(deps, control);
  record(deps, outage && cap.limit !== 'stopping' ? outageCap(cap, control, outage) : cap);
}

/** Records the cap decided and marks a stop as seen by the drain. */
function decided(
  deps: ActorDeps<GateStore>,
  cap: CapData,
  control: RunControl,
  waitingUntil: number | null,
): CapDecision {
  record(deps, cap);
  if (cap.limit === 'stopping') stopsSeen.add(deps);
  return { ...cap, control, waitingUntil };
}

/** The runs whose drain (or write gate) has seen a stop request in the cap it decided. */
const stopsSeen = new WeakSet<object>();

/** A write held back for a stop request (./write-gate.ts): from then on this run starts nothing new. */
export function markStopSeen(deps: object): void {
  stopsSeen.add(deps);
}

/**
 * Whether this run's scheduling has decided a cap under a stop request: from then on nothing new
 * starts. A drain following a bulk job does not decide caps until the job is followed to its end,
 * so the stop watcher waits for this before it ends a drain that has a bulk job.
 */
export function stopSeen(deps: ActorDeps<GateStore>): boolean {
  return stopsSeen.has(deps);
}

/** Appends `cap.changed` when the cap, the pause or what limits it changed (a new wording alone does not). */
function record(deps: ActorDeps<GateStore>, cap: CapData): void {
  const previous = recorded.get(deps) ?? null;
  if (
    previous &&
    previous.cap === cap.cap &&
    previous.paused === cap.paused &&
    previous.limit === cap.limit &&
    previous.ceiling === cap.ceiling &&
    previous.rule === cap.rule &&
    (cap.limit !== 'ratelimit' || previous.until === cap.until)
  )
    return;
  // Recorded only once the checkpoint holds it: a refused write (a lost lease) is seen again next turn.
  deps.store.appendEvent('cap.changed', { ...cap, previous }, deps.clock.now());
  recorded.set(deps, cap);
}
