/**
 * The cap in force: how many moves may be in flight right now, as one value. The operator's cap
 * (the plan's `move.concurrency`, or `shardmove control`'s override, 0 while paused) is the ceiling;
 * the scheduling gate lowers it (0 outside every maintenance window, the throttle's cap under load).
 * The drain computes it at every turn of its loop and records every change as a `cap.changed`
 * audit event; `--events`, the metrics file, the progress line, `status` and the report all show
 * that recorded value, so they cannot disagree.
 */
import type { CapData } from '../events/vocabulary.js';
import type { RunControl } from '../store/types.js';
import type { ActorDeps } from './types.js';

/** The cap in force, and what the loop also needs: the live control, and when a closed window reopens. */
export interface CapDecision extends CapData {
  control: RunControl;
  waitingUntil: number | null;
}

/** The last cap recorded by each run (one ActorDeps per run process). */
const recorded = new WeakMap<ActorDeps, CapData>();

/** The cap this run recorded last (null before its first drain looked). */
export function lastCap(deps: ActorDeps): CapData | null {
  return recorded.get(deps) ?? null;
}

/** The operator's cap: the plan's, `shardmove control`'s override, or 0 while paused. */
function operatorCap(control: RunControl, planCap: number): CapData {
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
      reason: `set with shardmove control (the plan says ${planCap})`,
    };
  }
  return { cap: planCap, ceiling: planCap, paused: false, limit: 'plan', reason: "the plan's move.concurrency" };
}

/**
 * Moves allowed in flight for this turn of the scheduling loop, recorded when it changed. Read from
 * the checkpoint at every turn, so an operator's change takes effect within one poll interval.
 * Nothing in flight is affected: a cap below the moves in flight only stops new ones.
 */
export async function capInForce(deps: ActorDeps): Promise<CapDecision> {
  const control = deps.store.readControl();
  let cap = operatorCap(control, deps.plan.move.concurrency);
  let waitingUntil: number | null = null;
  if (deps.gate && cap.cap > 0) {
    const d = await deps.gate.decide(cap.ceiling, deps.clock.now());
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
  record(deps, cap);
  return { ...cap, control, waitingUntil };
}

/** Appends `cap.changed` when the cap, the pause or what limits it changed (a new wording alone does not). */
function record(deps: ActorDeps, cap: CapData): void {
  const previous = recorded.get(deps) ?? null;
  if (
    previous &&
    previous.cap === cap.cap &&
    previous.paused === cap.paused &&
    previous.limit === cap.limit &&
    previous.ceiling === cap.ceiling &&
    previous.rule === cap.rule
  )
    return;
  // Recorded only once the checkpoint holds it: a refused write (a lost lease) is seen again next turn.
  deps.store.appendEvent('cap.changed', { ...cap, previous }, deps.clock.now());
  recorded.set(deps, cap);
}
