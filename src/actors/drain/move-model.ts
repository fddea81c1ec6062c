/**
 * Completion prediction: how long a move of a kind takes, learned from the moves this
 * run watched, so the drain polls when the earliest move in flight is expected to have ended
 * instead of a fixed interval later.
 *
 * The model is a fixed part plus a part per byte of `statistics.repository_size`, fitted by
 * Theil-Sen (the median of pairwise slopes, then the median intercept) over a window of the most
 * recent observations: a few outliers (a move that waited in the queue, one that hit a slow Gitaly)
 * move neither median. Items of unknown size are predicted by the median of all observed durations.
 * The window is checkpoint state (`move_model`, schema 8): a resumed run predicts from what the
 * run already watched.
 */
import type { Kind } from '../../plan/types.js';
import type { ItemRow } from '../../store/types.js';
import type { MoveModelStore } from '../../store/views.js';

/** Observations kept per kind: enough for a stable median, small enough to refit at every poll. */
export const MODEL_WINDOW = 64;
/** Fewer observations than this and the model does not predict (the drain polls at `poll.interval`). */
export const MODEL_MIN_OBS = 3;

/** One watched move: repository size (null: unknown) and duration in ms. */
export type Observation = [sizeBytes: number | null, ms: number];

interface Fit {
  fixedMs: number;
  perByteMs: number;
  /** Median of every observed duration: the prediction for an item of unknown size. */
  medianMs: number;
}

/** A typed array sorts numbers natively: a refit's 2,016 slopes cost a tenth of a comparator sort. */
function median(xs: ArrayLike<number>): number {
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Theil-Sen over the sized observations; the slope is never negative (a larger copy is never faster). */
export function fitObservations(obs: readonly Observation[]): Fit | null {
  if (obs.length < MODEL_MIN_OBS) return null;
  const medianMs = median(obs.map((o) => o[1]));
  const sized = obs.filter((o): o is [number, number] => o[0] !== null);
  const slopes = new Float64Array((sized.length * (sized.length - 1)) / 2);
  let n = 0;
  for (let i = 0; i < sized.length; i++) {
    for (let j = i + 1; j < sized.length; j++) {
      const a = sized[i] as [number, number];
      const b = sized[j] as [number, number];
      if (a[0] !== b[0]) slopes[n++] = (b[1] - a[1]) / (b[0] - a[0]);
    }
  }
  if (n === 0) return { fixedMs: medianMs, perByteMs: 0, medianMs };
  const perByteMs = Math.max(0, median(slopes.subarray(0, n)));
  const fixedMs = Math.max(0, median(sized.map((o) => o[1] - perByteMs * o[0])));
  return { fixedMs, perByteMs, medianMs };
}

/** The per-kind models of one run, loaded from and saved to the checkpoint. */
export class MoveModel {
  private readonly obs = new Map<Kind, Observation[]>();
  private readonly fits = new Map<Kind, Fit | null>();
  private readonly dirty = new Set<Kind>();

  constructor(private readonly store: MoveModelStore) {}

  private window(kind: Kind): Observation[] {
    let w = this.obs.get(kind);
    if (!w) {
      w = parseWindow(this.store.getMoveModel(kind));
      this.obs.set(kind, w);
    }
    return w;
  }

  /** Records a watched move's duration (ms). Kept in memory until `save`. */
  observe(kind: Kind, sizeBytes: number | null, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    const w = this.window(kind);
    w.push([sizeBytes, Math.round(ms)]);
    if (w.length > MODEL_WINDOW) w.splice(0, w.length - MODEL_WINDOW);
    this.fits.delete(kind);
    this.dirty.add(kind);
  }

  /** Expected duration of a move of this item (ms), or null while the kind has too few observations. */
  predict(kind: Kind, sizeBytes: number | null): number | null {
    let fit = this.fits.get(kind);
    if (fit === undefined) {
      fit = fitObservations(this.window(kind));
      this.fits.set(kind, fit);
    }
    if (!fit) return null;
    return sizeBytes === null ? fit.medianMs : fit.fixedMs + fit.perByteMs * sizeBytes;
  }

  /** The fitted parameters (for events and tests). */
  describe(kind: Kind): Fit | null {
    this.predict(kind, null);
    return this.fits.get(kind) ?? null;
  }

  /** Writes the windows changed since the last save (call inside the poll's transaction). */
  save(now: number): void {
    for (const kind of this.dirty) this.store.setMoveModel(kind, JSON.stringify({ v: 1, obs: this.window(kind) }), now);
    this.dirty.clear();
  }
}

function parseWindow(data: string | null): Observation[] {
  if (data === null) return [];
  try {
    const parsed = JSON.parse(data) as { v?: number; obs?: unknown };
    if (parsed.v !== 1 || !Array.isArray(parsed.obs)) return [];
    return parsed.obs.filter(
      (o): o is Observation =>
        Array.isArray(o) && o.length === 2 && (o[0] === null || typeof o[0] === 'number') && typeof o[1] === 'number',
    );
  } catch {
    // A damaged model only costs predictions: start learning again.
    return [];
  }
}

/**
 * When a poll at `polledAt` should look at a move in flight again, given its predicted end: at that
 * end, or, for a move already seen in flight past it (the model underestimated), a quarter of its
 * age later (at least `minGapMs`), so a long move the model got wrong costs a few polls, not one
 * every `poll.min_interval`.
 */
export function nextLook(
  row: Pick<ItemRow, 'scheduledAt' | 'intentAt'>,
  end: number,
  polledAt: number,
  minGapMs: number,
): number {
  const start = row.scheduledAt ?? row.intentAt ?? polledAt;
  if (start <= polledAt && end <= polledAt) return polledAt + Math.max(minGapMs, (polledAt - start) / 4);
  return end;
}

/**
 * The model's end of a move in flight, its start plus its predicted duration, with no push for a
 * move seen past it: what queue ahead counts as about to end (a move past its prediction ends any
 * moment, so its successor is due now, while the next look at it backs off). Null without a model.
 */
export function predictedEnd(model: MoveModel, kind: Kind, row: ItemRow, now: number): number | null {
  const d = model.predict(kind, row.sizeBytes);
  return d === null ? null : (row.scheduledAt ?? row.intentAt ?? now) + d;
}
