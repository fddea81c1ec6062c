/**
 * The dry run's duration estimate. It is a model, not a measurement, so its inputs and assumptions
 * are returned with it and printed next to the number. With repository sizes (GitLab lists
 * `statistics.repository_size` for projects to admins): each move costs a fixed overhead plus its
 * size at an assumed per-move copy rate; moves run `concurrency` at a time, and the largest one
 * bounds the end from below. Without any size (snippets and wikis are not listed with one): a
 * count-only estimate at an assumed time per move, and it says so.
 */
import { formatBytes, formatApproxDuration } from './summary.js';

/** What the dry run learnt about the items it would move. */
export interface EstimateInput {
  items: number;
  /** Sum of the known sizes. */
  bytes: number;
  /** Items listed with a size. */
  sized: number;
  /** The largest known size. */
  maxBytes: number;
  concurrency: number;
  /** Under `move.concurrency: auto`: which cap `concurrency` is and why (the last knee, or the start). */
  capAssumed?: string;
  /**
   * The instance's application rate limits on the listings a run makes (`GET /projects`,
   * `GET /groups`), where it shows them: pages a real run lists (its drain and its verification),
   * how many of them one window lets through and the window's length.
   */
  rateLimited?: { route: string; pages: number; budget: number; windowMs: number }[];
}

export interface Estimate {
  ms: number;
  /** "sizes" when at least one size was known, else "count". */
  basis: 'sizes' | 'count';
  /** The assumptions, in words, to print next to the number. */
  assumptions: string;
}

/** Overhead of one move besides copying (scheduling, Gitaly checks, the read-only window, polling). */
export const PER_MOVE_OVERHEAD_MS = 10_000;
/** Assumed copy rate of one move (Gitaly replicates over the network, one repository at a time). */
export const PER_MOVE_BYTES_PER_S = 50 * 1024 * 1024;
/** Count-only: assumed time per move when no size is known. */
export const COUNT_ONLY_MOVE_MS = 30_000;

/**
 * How long a run waits for the instance's rate limits: each listing route's pages beyond one
 * window's budget wait for the next window (nothing new starts meanwhile).
 */
export function rateLimitWaitMs(e: EstimateInput): { ms: number; words: string | null } {
  let ms = 0;
  const words: string[] = [];
  for (const r of e.rateLimited ?? []) {
    if (r.budget <= 0 || r.pages <= r.budget) continue;
    const wait = Math.floor((r.pages - 1) / r.budget) * r.windowMs;
    ms += wait;
    words.push(`${r.pages} pages of ${r.route} at ${r.budget} per ${formatApproxDuration(r.windowMs)}`);
  }
  return {
    ms,
    words: ms > 0 ? `plus ~${formatApproxDuration(ms)} held by the instance's rate limit (${words.join(', ')})` : null,
  };
}

/** The estimate and the assumptions behind it (pure), the rate limit's waiting included. */
export function estimateDuration(e: EstimateInput): Estimate {
  const moves = estimateMoves(e);
  const wait = rateLimitWaitMs(e);
  return wait.words === null
    ? moves
    : { ...moves, ms: moves.ms + wait.ms, assumptions: `${moves.assumptions}; ${wait.words}` };
}

/** The moves alone. */
function estimateMoves(e: EstimateInput): Estimate {
  const lanes = Math.max(1, e.concurrency);
  if (e.items === 0) return { ms: 0, basis: 'count', assumptions: 'nothing to move' };
  if (e.sized === 0) {
    return {
      ms: Math.ceil(e.items / lanes) * COUNT_ONLY_MOVE_MS,
      basis: 'count',
      assumptions: `count-only estimate: no repository sizes were listed, so every move is assumed to take ~${formatApproxDuration(COUNT_ONLY_MOVE_MS)}`,
    };
  }
  // Items without a size count as the average known one.
  const average = e.bytes / e.sized;
  const totalBytes = e.bytes + average * (e.items - e.sized);
  const copyMs = (bytes: number) => (bytes / PER_MOVE_BYTES_PER_S) * 1000;
  const workMs = e.items * PER_MOVE_OVERHEAD_MS + copyMs(totalBytes);
  const ms = Math.max(workMs / lanes, PER_MOVE_OVERHEAD_MS + copyMs(e.maxBytes));
  const unknown = e.items - e.sized;
  return {
    ms,
    basis: 'sizes',
    assumptions:
      `from repository sizes (${formatBytes(totalBytes)}${unknown > 0 ? `, ${unknown} items of unknown size counted as the average ${formatBytes(average)}` : ''}, largest ${formatBytes(e.maxBytes)}), ` +
      `assuming ~${formatBytes(PER_MOVE_BYTES_PER_S)}/s per move plus ~${formatApproxDuration(PER_MOVE_OVERHEAD_MS)} overhead each; a real run measures its own rate (status shows it)`,
  };
}
