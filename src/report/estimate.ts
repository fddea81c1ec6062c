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

/** The estimate and the assumptions behind it (pure). */
export function estimateDuration(e: EstimateInput): Estimate {
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
