/**
 * Every write waits for the gates: a run started outside its maintenance windows,
 * or while a pause rule (or the room on the destination) holds it, writes nothing to the instance
 * until it may, the weights included, since many change processes count a settings change as a
 * change; nor while a stop is asked for. Reads (pre-flight, listings, the room check) still run at once. The cap in force decides,
 * exactly as it does for moves, and its changes are recorded (`cap.changed`) the same way.
 */
import { capInForce, markStopSeen } from './cap.js';
import { abortError } from './errors.js';
import type { ActorDeps } from './types.js';
import type { GateStore } from '../store/views.js';

/**
 * Whether a stop was asked for, now: Ctrl-C (or SIGTERM, SIGHUP: the signal), a stop request in
 * the checkpoint's row, or the stop file the watcher has not yet written into the row.
 */
export function stopAskedNow(
  deps: Pick<ActorDeps<GateStore>, 'signal' | 'stopAsked'> & { store?: ActorDeps<GateStore>['store'] },
): boolean {
  if (deps.signal.aborted) return true;
  if (deps.stopAsked) return deps.stopAsked();
  return Boolean(deps.store?.readControl().stop);
}

/**
 * The last look before a write to the instance, after the reads that led to it: a read can take
 * seconds (a slow instance, a retried request), and a stop asked for meanwhile must keep the write
 * from being sent. Resolves when no stop was asked; otherwise it sends nothing and waits for the
 * run's end (its signal: the stop watcher ends a run that has nothing in flight), then throws the
 * abort. `what` names the write in the log. A dry run writes nothing: it resolves at once.
 */
export async function holdForStop(
  deps: Pick<ActorDeps<GateStore>, 'signal' | 'log' | 'dryRun' | 'clock' | 'stopAsked'> &
    Partial<Pick<ActorDeps<GateStore>, 'store' | 'plan'>>,
  what: string,
): Promise<void> {
  if (deps.dryRun) return;
  let said = false;
  for (;;) {
    if (deps.signal.aborted) {
      if (!said) deps.log.warn({ write: what }, `${what}: not sent, the run is ending (a stop, or a signal)`);
      throw abortError(deps.signal);
    }
    if (!stopAskedNow(deps)) return;
    if (!said) {
      deps.log.warn({ write: what }, `${what}: not sent, a stop was asked for`);
      // A drain holding a bulk POST may end now: the stop watcher waits for this (runtime/control/stop-run.ts).
      markStopSeen(deps);
      said = true;
    }
    try {
      await deps.clock.sleep(Math.min(deps.plan?.poll.intervalMs ?? 200, 200), deps.signal);
    } catch (err) {
      if (deps.signal.aborted) throw abortError(deps.signal);
      throw err;
    }
  }
}

/**
 * Resolves once neither a closed window nor a holding rule keeps the cap at 0 (at once without a
 * gate, or in a dry run). A stop request holds every write too, gate or none: a run asked to stop
 * starts nothing new, and ends (its signal aborts this wait) once nothing is in flight.
 */
export async function waitForGates(
  deps: Pick<ActorDeps<GateStore>, 'gate' | 'store' | 'plan' | 'clock' | 'log' | 'signal' | 'dryRun'>,
  what: string,
): Promise<void> {
  if (deps.dryRun || (!deps.gate && !deps.store.readControl().stop)) return;
  let said = false;
  for (;;) {
    const c = await capInForce(deps as ActorDeps<GateStore>);
    if (c.cap > 0 || (c.limit !== 'window' && c.limit !== 'rule' && c.limit !== 'stopping')) return;
    if (!said) {
      deps.log.info({ limit: c.limit, reason: c.reason }, `${what} waits for the gates`);
      said = true;
    }
    const now = deps.clock.now();
    const step = deps.plan.poll.intervalMs;
    const ms = c.waitingUntil !== null ? Math.max(10, Math.min(c.waitingUntil - now, step)) : step;
    try {
      await deps.clock.sleep(ms, deps.signal);
    } catch (err) {
      if (deps.signal.aborted) throw abortError(deps.signal);
      throw err;
    }
  }
}
