/**
 * What both drain loops do the same way: the loop of one pair and the next (./loop.ts) and the one
 * schedule's (./together-loop.ts). POST batches and polls run beside the loop and are measured (the
 * refill round trip); a failure is kept for the next turn to throw; launched moves get their
 * expected ends; `queue_ahead: auto` takes its depth from each poll. Each loop keeps its own turn,
 * inline: an async hop more per turn would move the moment it looks again relative to the batches
 * and polls beside it.
 */
import type { ItemRow } from '../../store/types.js';
import type { ActorDeps } from '../types.js';
import type { DrainCtx } from './context.js';
import type { Listing } from './listing.js';
import type { Wait } from './turn.js';
import { MoveModel } from './move-model.js';
import { expectEnd, pollInFlight } from './poll.js';
import type { Forecast } from './poll.js';
import { AUTO_START, RefillRoundTrip, nextAutoDepth } from './queue-ahead.js';
import type { AutoDepthState } from './queue-ahead.js';
import { DEFAULT_EXPOSURE_BUDGET } from '../../plan/queue-ahead-field.js';
import { scheduleBatch } from './schedule-batch.js';

/** Items per scheduling chunk (one intent transaction, its POSTs, one outcome transaction). */
export const SCHEDULE_CHUNK = 50;

/** A turn's wait when it sleeps. */
export type SleepWait = Extract<Wait, { do: 'sleep' }>;

export abstract class LoopCore {
  protected readonly deps: ActorDeps;
  /** Completion prediction: the expected ends of the moves in flight, learnt by each poll. */
  protected readonly forecast: Forecast;
  protected readonly roundTrip = new RefillRoundTrip();
  /** The poll cadence counts from here: the last poll's start, or a launch into an empty run. */
  protected anchor: number;
  /** A batch or poll that failed: thrown at the next turn's start. */
  protected failed: { err: unknown } | null = null;
  protected controlSeen: string | null = null;
  /** The poll running beside the loop, if any. */
  protected polling: Promise<void> | null = null;
  /** The cap the last turn saw (`queue_ahead: auto` stays within it). */
  protected lastCap = 0;
  private auto: AutoDepthState = AUTO_START;

  constructor(
    /** The drain the loop's polls and events are stamped with. */
    protected readonly ctx: DrainCtx,
  ) {
    this.deps = ctx.deps;
    // Poll when the earliest move in flight is expected to end, never later than `poll.interval`
    // after the last poll (or after scheduling into an empty run), never sooner than
    // `poll.min_interval` after it.
    this.forecast = {
      model: new MoveModel(ctx.store),
      lastPollAt: null,
      earliestEnd: null,
      minGapMs: this.deps.plan.poll.minIntervalMs,
      ends: [],
      kinds: new Map(),
    };
    this.anchor = this.deps.clock.now();
  }

  /** Successors allowed beyond the cap: `move.queue_ahead`, or what `auto` chose from the last polls. */
  protected depth(): number {
    const q = this.deps.plan.move.queueAhead;
    return q === 'auto' ? this.auto.depth : q;
  }

  /**
   * Expected ends of the moves `rows` (of `pairCtx`) launched now, each predicted by its own kind's
   * model; a launch into an empty run restarts the poll cadence.
   */
  protected expectLaunched(pairCtx: DrainCtx, rows: readonly ItemRow[], now: number, restartsCadence: boolean): void {
    const { forecast } = this;
    if (restartsCadence) {
      this.anchor = now;
      forecast.earliestEnd = null;
    }
    for (const row of rows) {
      const d = forecast.model.predict(pairCtx.kind, row.sizeBytes);
      if (d !== null) expectEnd(forecast, pairCtx.kind, now + d);
    }
  }

  /** Posts `rows` of `pairCtx` in the background; the cap counts them once their intents commit. */
  protected post(pairCtx: DrainCtx, posting: Set<Promise<void>>, rows: ItemRow[]): void {
    const { deps } = this;
    const startedAt = deps.clock.now();
    const batch: Promise<void> = this.settle(scheduleBatch(pairCtx, rows), () => {
      this.roundTrip.notePost(deps.clock.now() - startedAt);
      deps.onProgress?.();
    }).finally(() => {
      posting.delete(batch);
      this.changed();
    });
    posting.add(batch);
  }

  /** Chunks, each recorded when its own POSTs are answered: a move becomes pollable (and its slot reusable) sooner. */
  protected postChunks(pairCtx: DrainCtx, posting: Set<Promise<void>>, rows: ItemRow[]): void {
    for (let i = 0; i < rows.length; i += SCHEDULE_CHUNK)
      this.post(pairCtx, posting, rows.slice(i, i + SCHEDULE_CHUNK));
  }

  /** Starts a poll beside the loop; the cadence counts from its start, not its end. */
  protected poll(): Promise<void> {
    const { ctx, deps } = this;
    this.anchor = deps.clock.now();
    const startedAt = this.anchor;
    const p = this.settle(pollInFlight(ctx, this.forecast), () => {
      this.roundTrip.notePoll(deps.clock.now() - startedAt);
      this.noteSample();
      deps.onProgress?.();
    }).finally(() => {
      this.polling = null;
      this.changed();
    });
    this.polling = p;
    return p;
  }

  /** A poll or a POST batch ended: the checkpoint's items may have changed state. */
  protected changed(): void {}

  /**
   * What can end a turn's sleep early: the next page of `page`'s listing, and the running poll's end
   * when the wait asks for it. Synchronous, so that the loop still awaits its sleep inline (one more
   * async hop per turn would move the moment the loop looks again relative to the batches and polls
   * running beside it).
   */
  protected wakes(wait: SleepWait, page: Listing | null): Promise<void>[] {
    return [page?.nextPage(), wait.pollEnds ? this.polling : null].filter(
      (e): e is Promise<void> => e !== null && e !== undefined,
    );
  }

  /** After a sleep: whether this turn polls (not when woken early, while a poll runs, or before its time). */
  protected pollsNow(wait: SleepWait, woke: 'event' | 'deadline'): boolean {
    return wait.poll !== null && woke !== 'event' && this.polling === null && this.deps.clock.now() >= wait.poll.at;
  }

  /** `queue_ahead: auto`: the depth after this poll. */
  private noteSample(): void {
    const sample = this.forecast.sample;
    if (this.deps.plan.move.queueAhead !== 'auto' || !sample) return;
    const before = this.auto.depth;
    this.auto = nextAutoDepth(this.auto, sample, {
      roundTripMs: this.roundTrip.ms,
      cap: this.lastCap,
      exposureBudget: this.deps.plan.move.exposureBudget ?? DEFAULT_EXPOSURE_BUDGET,
    });
    if (this.auto.depth !== before)
      this.deps.log.debug({ depth: this.auto.depth, roundTripMs: this.roundTrip.ms }, 'queue_ahead auto: depth');
  }

  /** `work` with its outcome applied: `done` when it succeeds; a failure kept for the next turn to throw. */
  protected settle(work: Promise<unknown>, done: () => void): Promise<void> {
    return work.then(done, (err: unknown) => {
      this.failed ??= { err };
    });
  }
}
