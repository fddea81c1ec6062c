/**
 * One poll of every move the run has in flight, through the move lists (./track-moves.ts), with
 * the outcomes applied in one transaction.
 */
import { KINDS } from '../../plan/types.js';
import type { Kind } from '../../plan/types.js';
import type { ItemRow } from '../../store/types.js';
import type { DrainCtx } from './context.js';
import { event } from './context.js';
import { applyMove, isTerminal, stuckPhase } from './outcome.js';
import type { PollSample } from './queue-ahead.js';
import { confirmNoSpace } from './no-space.js';
import { nextLook, predictedEnd } from './move-model.js';
import type { MoveModel } from './move-model.js';
import { reconcileItem, recordStuckState } from './reconcile.js';
import { pollMoves } from './track-moves.js';

/** Upper bound on in-flight rows read per poll (bulk mode can have a whole storage in flight). */
const MAX_TRACKED = 100_000;

/** Kinds that may have rows in flight: the plan's, and this drain's. */
export function trackedKinds(ctx: DrainCtx): Kind[] {
  return KINDS.filter((k) => k === ctx.kind || ctx.deps.plan.move.kinds.includes(k));
}

/**
 * What the throttled loop carries from poll to poll for completion prediction (./move-model.ts).
 * Bulk polling passes none: its moves wait in the instance's queue, which says nothing about how
 * long a move runs.
 */
export interface Forecast {
  model: MoveModel;
  /** When the previous poll of this process started (null: none yet, so nothing is learned). */
  lastPollAt: number | null;
  /**
   * When the next poll should look, after the last one: the earliest of every kind's looks (a
   * predicted end, a move past it pushed out, a look at a kind the model cannot predict yet), and
   * the ends of the moves launched since. Null: nothing to look for before `poll.interval`.
   */
  earliestEnd: number | null;
  /** `poll.min_interval`. */
  minGapMs: number;
  /**
   * The model's end (ms since epoch) of every move in flight with a prediction, as of the last poll
   * plus the moves scheduled since, a move seen past it left at it: what queue ahead
   * (./queue-ahead.ts) counts as about to end.
   */
  ends: number[];
  /** What the last poll saw of the moves (`queue_ahead: auto`); null before a second poll. */
  sample?: PollSample | null;
  /**
   * Per kind: when its moves were last polled, and the expected ends of its moves in flight (the
   * moves launched since included). A poll reads only the kinds with a move expected to have ended,
   * or not looked at for `poll.interval`: the others' moves are expected later, and a move list
   * page per kind and poll was most of a drain's requests once every kind moved at once. Absent:
   * every kind is read at every poll.
   */
  kinds?: Map<Kind, KindForecast>;
}

/** What a forecast keeps of one kind (see {@link Forecast.kinds}). */
export interface KindForecast {
  lastPollAt: number;
  /** The model's ends of its moves in flight (queue ahead's; a move past its own stays at it). */
  ends: number[];
  /**
   * When the next poll should look at this kind: its earliest expected end, a move past its
   * prediction pushed out by a quarter of its age, and the looks at moves the model cannot predict
   * yet (its first moves). Null or absent when there is none. Only the polls follow it.
   */
  lookAt?: number | null;
}

/**
 * When to look again at a move the model cannot predict yet (its kind has too few finished moves):
 * `poll.min_interval` after it was posted, then a quarter of its age later each time, as for a
 * move seen past its prediction, but never later than the next whole `poll.interval` since its
 * POST (where polling at that interval would have looked). Waiting for the interval alone left the
 * slots of a kind's first moves idle for most of it: the one schedule's smaller kinds start late in
 * the run, each with an empty model, and their first moves end long before the interval does.
 */
export function coldLook(
  row: Pick<ItemRow, 'scheduledAt' | 'intentAt'>,
  now: number,
  minGapMs: number,
  intervalMs: number,
): number {
  const start = row.scheduledAt ?? row.intentAt ?? now;
  const age = Math.max(0, now - start);
  const backoff = now + Math.max(minGapMs, age / 4);
  if (!(intervalMs > 0)) return backoff;
  const cadence = start + (Math.floor(age / intervalMs) + 1) * intervalMs;
  return Math.min(backoff, Math.max(cadence, now + minGapMs));
}

/** Adds a look at a move of `kind` just launched that the model cannot predict yet. */
export function expectLook(forecast: Forecast, kind: Kind, at: number): void {
  const k = forecast.kinds?.get(kind);
  if (k) k.lookAt = k.lookAt == null ? at : Math.min(k.lookAt, at);
  if (forecast.earliestEnd === null || at < forecast.earliestEnd) forecast.earliestEnd = at;
}

/** Adds the expected end of a move of `kind` just launched. */
export function expectEnd(forecast: Forecast, kind: Kind, end: number): void {
  forecast.ends.push(end);
  forecast.kinds?.get(kind)?.ends.push(end);
  expectLook(forecast, kind, end);
}

/**
 * How long a finished move took, as well as polls can tell: it ended after it was last seen in
 * flight and before this poll. A move seen in flight at the previous poll gives its lower bound:
 * a model learned from lower bounds polls a little early, finds the move still running, and looks
 * again after a quarter of its age (`nextLook`), so the next bracket is narrow and the model
 * stays just below the truth instead of drifting late (a late poll idles the slot; an early one
 * costs one request). A move not seen since its POST gives only the middle of [POST, this poll]:
 * that is how the model starts, and how it comes down when it expected moves to take longer. A
 * move that ended before this process's first poll (a restart) teaches nothing.
 */
function learn(forecast: Forecast, kind: Kind, row: ItemRow, now: number): void {
  if (forecast.lastPollAt === null || row.scheduledAt === null) return;
  // The last poll that looked at this kind's moves (every poll, without per-kind polling).
  const lastSeen = forecast.kinds ? (forecast.kinds.get(kind)?.lastPollAt ?? null) : forecast.lastPollAt;
  const seenAlive = lastSeen !== null && lastSeen > row.scheduledAt;
  const ms = seenAlive ? lastSeen - row.scheduledAt : (now - row.scheduledAt) / 2;
  forecast.model.observe(kind, row.sizeBytes, ms);
}

/** Whether this poll reads `kind`'s moves: always without a forecast by kind. */
function kindDue(forecast: Forecast | undefined, kind: Kind, now: number, intervalMs: number): boolean {
  const k = forecast?.kinds?.get(kind);
  if (!k) return true;
  return now - k.lastPollAt >= intervalMs || (k.lookAt != null && k.lookAt <= now);
}

/**
 * One poll over every kind with moves in flight (the concurrency cap is run-wide, so moves of
 * another kind left by an earlier interrupted drain are tracked too). Returns rows still in flight
 * for this drain's (kind, source). With a forecast, finished moves train the model (saved in the
 * poll's transaction) and `forecast.earliestEnd` becomes the earliest expected end of what is left.
 */
export async function pollInFlight(ctx: DrainCtx, forecast?: Forecast): Promise<number> {
  let mine = 0;
  const now = ctx.deps.clock.now();
  let earliest: number | null = null;
  const ends: number[] = [];
  const seen = { ended: 0, queued: 0, running: 0 };
  let kindEnds: number[] = [];
  let kindLook: number | null = null;
  const looks: number[] = [];
  const expect = (kind: Kind, row: ItemRow) => {
    if (!forecast) return;
    const end = predictedEnd(forecast.model, kind, row, now);
    if (end !== null) kindEnds.push(end);
    const at =
      end === null
        ? coldLook(row, now, forecast.minGapMs, ctx.deps.plan.poll.intervalMs)
        : nextLook(row, end, now, forecast.minGapMs);
    kindLook = kindLook === null ? at : Math.min(kindLook, at);
  };
  const open = openByKind(ctx);
  const due = (kind: Kind, rows: readonly ItemRow[]) =>
    !(forecast?.kinds?.get(kind) && rows.length > 0 && !kindDue(forecast, kind, now, ctx.deps.plan.poll.intervalMs));
  // Every kind's move list is asked for at once: read one after another, a poll of three kinds
  // took three round trips, and the slots whose moves it finds ended idle until the last answers.
  const reads = new Map<Kind, Promise<Awaited<ReturnType<typeof pollMoves>>>>();
  for (const kind of trackedKinds(ctx)) {
    const rows = open.get(kind)?.inFlight ?? [];
    if (rows.length === 0 || !due(kind, rows)) continue;
    const ids = rows.map((r) => r.moveId).filter((id): id is number => id !== null);
    const read = pollMoves(ctx.deps.api, kind, ids);
    // Awaited below in the kinds' order; a failure there is thrown then, not as an unhandled rejection.
    read.catch(() => undefined);
    reads.set(kind, read);
  }
  for (const kind of trackedKinds(ctx)) {
    const { scheduling, inFlight: rows } = open.get(kind) ?? { scheduling: [], inFlight: [] };
    const kept = forecast?.kinds?.get(kind);
    if (kept && !due(kind, rows)) {
      // Nothing of this kind is expected to have ended yet: its moves keep their expected ends.
      ends.push(...kept.ends);
      if (kept.lookAt != null) looks.push(kept.lookAt);
      continue;
    }
    kindEnds = [];
    kindLook = null;
    for (const row of scheduling) expect(kind, row);
    const read = reads.get(kind);
    if (rows.length === 0 || !read) {
      record(forecast, kind, now, kindEnds, ends, kindLook, looks);
      continue;
    }
    const { found, missing } = await read;
    const notes = await confirmNoSpace(ctx.deps, kind, rows, found);
    const lost: ItemRow[] = [];
    const stuck: ItemRow[] = [];
    ctx.store.batch(() => {
      for (const row of rows) {
        const k = { ...ctx, kind, source: row.source };
        const move = row.moveId === null ? undefined : found.get(row.moveId);
        if (move) {
          const done = applyMove(k, row, move, row.scheduledAt ?? ctx.deps.clock.now(), notes.get(move.id));
          if (done && !isTerminal(move.state)) stuck.push(row);
          if (done && move.state === 'finished' && forecast) learn(forecast, kind, row, now);
          if (done) seen.ended++;
          else seen[stuckPhase(move.state)]++;
          if (!done) expect(kind, row);
          if (!done && kind === ctx.kind && row.source === ctx.source) mine++;
        } else if (row.moveId === null || missing.includes(row.moveId)) {
          lost.push(row);
          seen.ended++;
        }
      }
      forecast?.model.save(now);
    });
    for (const row of stuck) await recordStuckState({ ...ctx, kind, source: row.source }, [row.id]);
    for (const row of lost) {
      await reconcileItem({ ...ctx, kind, source: row.source }, { ...row, moveId: null }, 'lost-move');
    }
    record(forecast, kind, now, kindEnds, ends, kindLook, looks);
  }
  if (forecast) {
    // The polls follow the looks; the ends (a move past its prediction at it) are queue ahead's.
    for (const e of looks) if (earliest === null || e < earliest) earliest = e;
    forecast.sample = forecast.lastPollAt === null ? null : { elapsedMs: now - forecast.lastPollAt, ...seen };
    forecast.lastPollAt = now;
    forecast.earliestEnd = earliest;
    forecast.ends = ends;
  }
  return mine;
}

/** Keeps what this poll learnt of `kind`: when it was polled, its moves' expected ends, its next cold look. */
function record(
  forecast: Forecast | undefined,
  kind: Kind,
  now: number,
  kindEnds: number[],
  ends: number[],
  lookAt: number | null,
  looks: number[],
): void {
  ends.push(...kindEnds);
  if (lookAt !== null) looks.push(lookAt);
  forecast?.kinds?.set(kind, { lastPollAt: now, ends: kindEnds, lookAt });
}

/** The rows being scheduled or in flight, of every kind, read at once. */
function openByKind(ctx: DrainCtx): Map<Kind, { scheduling: ItemRow[]; inFlight: ItemRow[] }> {
  const out = new Map<Kind, { scheduling: ItemRow[]; inFlight: ItemRow[] }>();
  // As many as the per-kind, per-state reads before them (bulk mode can have a whole storage in flight).
  for (const row of ctx.store.openItems(MAX_TRACKED * KINDS.length * 2)) {
    let g = out.get(row.kind);
    if (!g) out.set(row.kind, (g = { scheduling: [], inFlight: [] }));
    (row.state === 'scheduling' ? g.scheduling : g.inFlight).push(row);
  }
  return out;
}

/**
 * Items quarantined as stuck are looked at again when a drain starts: once the instance shows
 * their move terminal, the outcome applies as if polled (moved, or back to pending when it
 * failed, the item being writable again). While the move still runs they stay quarantined.
 */
export async function recheckStuck(ctx: DrainCtx): Promise<number> {
  const { deps, store, kind, source } = ctx;
  const rows = store
    .itemsInState(kind, source, 'quarantined', MAX_TRACKED)
    .filter((r) => r.stuckAt !== null && r.moveId !== null);
  let settled = 0;
  for (const row of rows) {
    const move = await deps.api.getMove(kind, row.moveId as number);
    if (!move || !isTerminal(move.state)) continue;
    event(ctx, 'move.unstuck', { id: row.id, moveId: move.id, moveState: move.state });
    store.batch(() => {
      if (move.state === 'failed')
        store.markPending(kind, row.id, deps.clock.now(), move.errorMessage ?? 'stuck move failed', true);
      else applyMove(ctx, row, move, row.scheduledAt ?? deps.clock.now());
    });
    settled++;
  }
  return settled;
}
