/**
 * The run's pace, one source for every live view of it: the progress line, the `--events` progress
 * lines and the metrics file's ETA. One meter per run process (the runtime makes it and hands it to
 * every observer), so the three say the same rate and the same ETA.
 *
 * The rate is this process's own: the moves that ended since it started (those it inherited in
 * flight from an earlier process do not count), over the last 10 minutes, given once 5 of them
 * ended. A resumed run is therefore "measuring" for a while instead of dividing the last process's
 * moves by a few seconds (which made a resume show thousands of moves a minute and an ETA of 0s).
 * While the run is held the measurement starts over, and no ETA holds.
 */
import type { StatusSummary } from '../store/types.js';
import { progressByKind } from './summary.js';

/** Moves that must end in this process before a rate is given. */
export const MIN_MOVES_FOR_RATE = 5;
const RATE_WINDOW_MS = 10 * 60_000;

/** The moves per minute of this process, over the last 10 minutes, from samples of the moved count. */
export class RateMeter {
  private samples: { at: number; n: number }[] = [];
  /** Moves already ended (moved0) or in flight (inherited) when the process started: not this process's. */
  constructor(
    private readonly moved0: number,
    private readonly inherited: number,
    at: number,
  ) {
    this.samples.push({ at, n: 0 });
  }

  /** Takes a sample; `held`: nothing is scheduled, so the measurement starts over. */
  note(at: number, moved: number, held: boolean): void {
    const n = Math.max(0, moved - this.moved0 - this.inherited);
    const last = this.samples.at(-1)!;
    if (held) {
      this.samples = [{ at, n }];
      return;
    }
    if (at - last.at >= 1_000 || n !== last.n) this.samples.push({ at, n });
    while (this.samples.length > 2 && this.samples[1]!.at <= at - RATE_WINDOW_MS) this.samples.shift();
  }

  /** Moves per minute, or null until MIN_MOVES_FOR_RATE moves ended in the window. */
  perMinute(): number | null {
    const first = this.samples[0]!;
    const last = this.samples.at(-1)!;
    const n = last.n - first.n;
    if (n < MIN_MOVES_FOR_RATE || last.at <= first.at) return null;
    return (n / (last.at - first.at)) * 60_000;
  }
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

const movedIn = (s: Pick<StatusSummary, 'counts'>) =>
  s.counts.filter((c) => c.state === 'moved').reduce((a, c) => a + c.n, 0);
const inFlightIn = (s: Pick<StatusSummary, 'counts'>) =>
  s.counts.filter((c) => c.state === 'in_flight' || c.state === 'scheduling').reduce((a, c) => a + c.n, 0);

/** The pace of one run process: made when it starts, read by each of its observers. */
export class PaceMeter {
  private readonly meter: RateMeter;

  /** `start`: the counts when this process started driving the run (what it inherits is not its own). */
  constructor(start: Pick<StatusSummary, 'counts'>, at: number) {
    this.meter = new RateMeter(movedIn(start), inFlightIn(start), at);
  }

  /** Samples the counts and gives the pace; `held`: nothing new is scheduled now (../report/hold.ts). */
  read(at: number, summary: Counts, held: boolean): Pace {
    this.meter.note(at, movedIn(summary), held);
    const perMinute = this.meter.perMinute();
    const remaining = remainingOf(summary);
    return { perMinute, etaMs: etaOf(remaining, perMinute, held), remaining };
  }
}
