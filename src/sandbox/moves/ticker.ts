/**
 * The engine's timing: ONE timer, on the sandbox's clock, to the earliest due time of a running
 * move. A tick starts what can start and advances what is due, all in one transaction, at most
 * MAX_TRANSITIONS_PER_TICK transitions before it yields to the event loop.
 */
import type { Timer } from '../../shared/clock.js';
import type { EngineCore, Running } from './core.js';
import { MAX_LAG_MS } from './core.js';
import { fill } from './admission.js';
import { advance } from './steps.js';
import { reloadEngine } from './reload.js';
import { resync } from './bandwidth.js';

/** Transitions per tick before yielding to the event loop. */
const MAX_TRANSITIONS_PER_TICK = 5000;

/** Runs the engine's ticks. */
export interface Ticker {
  /** Rebuilds from the records and starts ticking. */
  start(): void;
  close(): void;
  /** A tick on the next turn of the event loop (after new moves were queued). */
  kick(): void;
  readonly started: boolean;
  readonly closed: boolean;
}

/** Advances every move due by `now`; returns false when it stopped early (more work left). */
function drain(core: EngineCore, now: number): boolean {
  for (let n = 0; n < MAX_TRANSITIONS_PER_TICK; n++) {
    let best = -1;
    let bestDue = Number.POSITIVE_INFINITY;
    for (let i = 0; i < core.running.length; i++) {
      const due = (core.running[i] as Running).due;
      if (due < bestDue) {
        bestDue = due;
        best = i;
      }
    }
    // A disk event (a transfer's end, a busy window's edge) first: it moves other copies' ends.
    const diskAt = core.disks?.nextEvent() ?? Number.POSITIVE_INFINITY;
    if (diskAt <= now && diskAt <= bestDue) {
      core.disks?.advanceTo(diskAt);
      resync(core);
      continue;
    }
    if (best < 0 || bestDue > now) return true;
    advance(core, best, now);
  }
  return false;
}

/** Whether a tick would change anything (skips an empty transaction on every kick). */
function hasWork(core: EngineCore, now: number): boolean {
  if (hasFreeWorkerAndQueue(core)) return true;
  for (const r of core.running) if (r.due <= now) return true;
  return (core.disks?.nextEvent() ?? Number.POSITIVE_INFINITY) <= now;
}

function hasFreeWorkerAndQueue(core: EngineCore): boolean {
  return core.running.length < core.workers && core.queue.head < core.queue.ids.length;
}

/** The earliest due time of a running move or disk event (infinity when none). */
function nextDue(core: EngineCore): number {
  let next = core.disks?.nextEvent() ?? Number.POSITIVE_INFINITY;
  for (const r of core.running) if (r.due < next) next = r.due;
  return next;
}

export function createTicker(core: EngineCore): Ticker {
  const { clock, log } = core;
  let timer: Timer | null = null;
  let timerAt = Number.POSITIVE_INFINITY;
  let immediate: NodeJS.Immediate | null = null;
  let started = false;
  let closed = false;
  const runTick = core.db.transaction((now: number): boolean => {
    // A worker idle at the tick has been free since before the waiting moves came (a worker that
    // frees up while one waits takes it then, in drain), so each starts when it was scheduled, as
    // Sidekiq's free thread fetches a job the moment it is pushed; bounded by MAX_LAG_MS.
    fill(core, now - MAX_LAG_MS, now);
    return drain(core, now);
  });

  /** One pass: start what can start, advance what is due, then wait for the next due time. */
  function tick(): void {
    if (closed) return;
    let complete = true;
    const now = clock.now();
    try {
      if (hasWork(core, now)) complete = runTick(now);
    } catch (err) {
      // The transaction rolled back: rebuild the in-memory view from the database.
      log.error({ err }, 'move engine tick failed');
      core.room.forget();
      reloadEngine(core);
    }
    if (!complete) kick();
    else arm();
  }

  function arm(): void {
    if (closed || !started) return;
    if (hasFreeWorkerAndQueue(core)) {
      kick();
      return;
    }
    const next = nextDue(core);
    if (next === Number.POSITIVE_INFINITY) return;
    if (timer && timerAt <= next) return;
    if (timer) clock.clearTimeout(timer);
    timerAt = next;
    timer = clock.setTimeout(
      () => {
        timer = null;
        timerAt = Number.POSITIVE_INFINITY;
        tick();
      },
      Math.max(0, next - clock.now()),
    );
    timer.unref();
  }

  function kick(): void {
    if (!started || closed || immediate) return;
    // A turn of the event loop, not a wait in time: no clock owns it (a simulated clock skips
    // waits, never the work between them).
    immediate = setImmediate(() => {
      immediate = null;
      tick();
    });
    immediate.unref();
  }

  return {
    get started() {
      return started;
    },
    get closed() {
      return closed;
    },
    start() {
      started = true;
      reloadEngine(core);
      kick();
    },
    close() {
      closed = true;
      if (timer) clock.clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
      timer = null;
      immediate = null;
    },
    kick,
  };
}
