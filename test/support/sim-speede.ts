/**
 * Additions to the in-process harness (./sim-harness.ts) for tests that steer a live run: the run's
 * clock held, so only the test moves it (a step at a time, until what the test waits for is there),
 * and the operator's commands beside it (`control`, `status`, ...) on the same wall time with timers
 * of their own, as another process on the same host would be: they never wait for the held clock.
 */
import { realTimersAt } from './fake-clock.js';
import type { FakeClock } from './fake-clock.js';
import type { SimCommand, Simulation } from './sim-harness.js';
import { commandsOn } from './sim-harness.js';

/** Lets the work already queued run (promise continuations, I/O callbacks due now). */
const turn = () => new Promise<void>((r) => setImmediate(r));

/**
 * `shardmove` command lines on the simulation's wall time with real timers: the operator's commands
 * beside a run whose clock the test holds (`holdClock`).
 */
export function operatorCommands(sim: Simulation): Pick<Simulation, 'start' | 'shardmove'> {
  return commandsOn(realTimersAt(() => sim.clock.now()));
}

/** Holds the simulated clock: from now on only `stepUntil` (or `releaseClock`) moves it. */
export function holdClock(clock: FakeClock): void {
  clock.autoAdvance = false;
}

/**
 * Moves the held clock one timer at a time, letting the work each one starts run, until `done`
 * says so of what `probe` gives; returns the last value either way, after `timeoutMs` of real
 * time at most (the caller's assertion then says what did not come).
 */
export async function stepUntil<T>(
  clock: FakeClock,
  probe: () => T | Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (done(v) || Date.now() > end) return v;
    const due = clock.nextDue();
    if (due === null) await new Promise((r) => setTimeout(r, 2));
    else await clock.advanceTo(due);
    await turn();
  }
}

/**
 * Lets the clock move by itself again and brings `command` to its end: whatever sleep began while
 * the clock was held ends as it would have (the run's sleeps move the clock again).
 */
export async function releaseClock(clock: FakeClock, command: SimCommand | Promise<unknown>): Promise<void> {
  clock.autoAdvance = true;
  const finished = 'done' in command ? command.done : command;
  for (let ended = false; !ended;) {
    const due = clock.nextDue();
    const step = due === null ? turn() : clock.advanceTo(due);
    ended = await Promise.race([finished.then(() => true), step.then(() => false)]);
  }
}
