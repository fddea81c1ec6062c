/**
 * Every write waits for the gates: a run started outside its maintenance windows,
 * or while a pause rule (or the room on the destination) holds it, writes nothing to the instance
 * until it may, the weights included, since many change processes count a settings change as a
 * change; nor while a stop is asked for. Reads (pre-flight, listings, the room check) still run at once. The cap in force decides,
 * exactly as it does for moves, and its changes are recorded (`cap.changed`) the same way.
 */
import { capInForce } from './cap.js';
import { abortError } from './errors.js';
import type { ActorDeps } from './types.js';

/**
 * Resolves once neither a closed window nor a holding rule keeps the cap at 0 (at once without a
 * gate, or in a dry run). A stop request holds every write too, gate or none: a run asked to stop
 * starts nothing new, and ends (its signal aborts this wait) once nothing is in flight.
 */
export async function waitForGates(
  deps: Pick<ActorDeps, 'gate' | 'store' | 'plan' | 'clock' | 'log' | 'signal' | 'dryRun'>,
  what: string,
): Promise<void> {
  if (deps.dryRun || (!deps.gate && !deps.store.readControl().stop)) return;
  let said = false;
  for (;;) {
    const c = await capInForce(deps as ActorDeps);
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
