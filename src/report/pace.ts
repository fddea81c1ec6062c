/**
 * The run's pace, one computation for every view of it: the progress line, the `--events` progress
 * lines, the metrics file's ETA, `status` (text and JSON) and the report. One meter per run process
 * (the runtime makes it and hands it to every observer); `status` in another process computes the
 * same rate and ETA (paceOf) from the same checkpoint rows.
 *
 * The rate is this process's own: the moves it scheduled that ended (those it inherited in flight
 * from an earlier process do not count), over the last 10 minutes, given once 5 of them ended. A
 * resumed run is therefore "measuring" for a while instead of dividing the last process's moves by
 * a few seconds (which made a resume show thousands of moves a minute and an ETA of 0s). While the
 * run is held the measurement starts over, and no ETA holds.
 */
import type { StatusSummary } from '../store/types.js';
import { progressByKind } from './summary.js';

/** Moves that must end in this process before a rate is given. */
export const MIN_MOVES_FOR_RATE = 5;
export const RATE_WINDOW_MS = 10 * 60_000;

/**
 * Counts the moves the run process that started at `startedAt` scheduled and that ended at or
 * after `from` (the checkpoint's items: `moved_at >= from`, `scheduled_at >= startedAt`). Moves it
 * inherited in flight were scheduled before it started, so they never count.
 */
export type OwnMovesSince = (from: number) => number;

/** What one pace is computed from, the same for the run process and for `status` reading its checkpoint. */
export interface PaceInput {
  now: number;
  /** When the run process driving the run started (its `run.started`). */
  startedAt: number;
  /** When the run last went on after a hold (nothing scheduled), or null: the measurement starts over then. */
  releasedAt: number | null;
  /** Nothing new is scheduled now (../events/hold.ts): no ETA. */
  held: boolean;
  /** Items neither done nor quarantined (remainingOf). */
  remaining: number;
  ownMovesSince: OwnMovesSince;
}

/**
 * The one pace of a run (pure but for the count it asks for): this process's own moves over the
 * last 10 minutes, or since it started or a hold ended when that is later, given once 5 of them
 * ended; the ETA of what remains at that rate. The progress line, the `--events` progress lines,
 * the metrics file, `status` (text and JSON) and the report all show this one.
 */
export function paceOf(p: PaceInput): Pace {
  const from = Math.max(p.now - RATE_WINDOW_MS, p.startedAt, p.releasedAt ?? Number.NEGATIVE_INFINITY);
  const n = p.held ? 0 : p.ownMovesSince(from);
  const perMinute = p.held || n < MIN_MOVES_FOR_RATE || p.now <= from ? null : (n / (p.now - from)) * 60_000;
  return { perMinute, etaMs: etaOf(p.remaining, perMinute, p.held), remaining: p.remaining };
}

/** The pace at one moment. */
export interface Pace {
  /** Moves per minute of this process; null while measuring. */
  perMinute: number | null;
  /** ms until the remaining items are done at that rate: 0 when none remain, null when unknown (measuring, held). */
  etaMs: number | null;
  /** Items neither done nor quarantined. */
  remaining: number;
}

type Counts = Pick<StatusSummary, 'counts' | 'retrying'>;

/** Items neither done nor quarantined. */
export function remainingOf(summary: Counts): number {
  return progressByKind(summary).reduce((a, p) => a + p.waiting + p.inFlight, 0);
}

/** The ETA of `remaining` items at `perMinute` (pure): 0 when none remain, null when it cannot be told. */
export function etaOf(remaining: number, perMinute: number | null, held: boolean): number | null {
  if (remaining === 0) return 0;
  if (held || perMinute === null || perMinute <= 0) return null;
  return (remaining / perMinute) * 60_000;
}

/**
 * The pace of one run process: made when it starts, read by each of its observers. It remembers
 * when a hold it saw ended, so the measurement starts over then (`status`, in another process,
 * reads the same moment from the recorded caps: releasedAtOf).
 */
export class PaceMeter {
  private releasedAt: number | null = null;

  /** `startedAt`: when this process started driving the run; `ownMovesSince`: see OwnMovesSince. */
  constructor(
    private readonly startedAt: number,
    private readonly ownMovesSince: OwnMovesSince,
  ) {}

  /** The pace now; `held`: nothing new is scheduled now (../events/hold.ts). */
  read(at: number, summary: Counts, held: boolean): Pace {
    if (held) this.releasedAt = at;
    const remaining = remainingOf(summary);
    return paceOf({
      now: at,
      startedAt: this.startedAt,
      releasedAt: this.releasedAt,
      held,
      remaining,
      ownMovesSince: this.ownMovesSince,
    });
  }
}

/**
 * When the run went on after its last hold, from the caps it recorded (oldest first, those of the
 * running process): the first cap above 0 after the last at 0; null when it was never held.
 */
export function releasedAtOf(caps: readonly { at: number; cap: number }[]): number | null {
  let released: number | null = null;
  let held = false;
  for (const c of caps) {
    if (c.cap === 0) held = true;
    else if (held) {
      held = false;
      released = c.at;
    }
  }
  return held ? (caps.at(-1)?.at ?? null) : released;
}
