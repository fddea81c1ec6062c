/**
 * Storage choice and move timing, as pure functions.
 *
 * Picking follows GitLab's `pick_repository_storage` (reference §3): only configured storages with
 * a positive weight take part, and the winner is `max_by { rand ** (1 / weight) }`, a weighted
 * random choice. When every weight is 0, GitLab still uses `default`; the sandbox does the same
 * (or the first configured storage when there is no `default`). The source storage is not
 * excluded, so a pick can land on it, as in GitLab.
 */

/** A weighted random pick among `storages`; `random` returns values in [0, 1). */
export function pickStorage(
  weights: Record<string, number>,
  storages: readonly string[],
  random: () => number,
): string {
  let best: string | undefined;
  let bestKey = -1;
  for (const name of storages) {
    const w = weights[name];
    if (typeof w !== 'number' || !(w > 0)) continue;
    // rand ** (1 / w): the normalisation GitLab applies does not change the argmax.
    const key = Math.pow(random(), 1 / w);
    if (key > bestKey) {
      bestKey = key;
      best = name;
    }
  }
  if (best !== undefined) return best;
  return storages.includes('default') ? 'default' : (storages[0] ?? 'default');
}

/**
 * Base speed of the simulated copy: 50 ms per MB at speed 1 (a 40 MB repository takes 2 s, the
 * 4 GB maximum of the default seed a bit over 3 minutes), never less than MIN_MOVE_MS.
 */
export const MS_PER_MB = 50;
export const MIN_MOVE_MS = 10;
/** Share of a move spent copying (started); the rest is the cleanup of the source (replicated). */
export const COPY_SHARE = 0.9;

/** Total duration of a move: `fixedMs` when given, else proportional to size and divided by speed. */
export function moveDuration(sizeMb: number, speed: number, fixedMs?: number): number {
  if (fixedMs !== undefined) return Math.max(0, Math.round(fixedMs));
  const s = speed > 0 ? speed : 1;
  return Math.max(MIN_MOVE_MS, Math.round((Math.max(0, sizeMb) * MS_PER_MB) / s));
}

/** Splits a duration into the copy (started) and cleanup (replicated) phases. */
export function splitDuration(totalMs: number): { copyMs: number; cleanupMs: number } {
  const copyMs = Math.round(totalMs * COPY_SHARE);
  return { copyMs, cleanupMs: totalMs - copyMs };
}

/**
 * The part of a move that does not depend on the disks' bandwidth, at speed 1, when the seed gives
 * bandwidths (./disks.ts): the job's start and the checksums of both copies and the switch
 * (FIXED_COPY_MS, in `started`, taken after the transfer), and the removal of the source copy
 * (FIXED_CLEANUP_MS, all of `replicated`).
 */
export const FIXED_COPY_MS = 2_000;
export const FIXED_CLEANUP_MS = 1_000;

/** A fixed part of a move at `speed` (time compression), at least 1 ms. */
export function fixedPartMs(ms: number, speed: number): number {
  return Math.max(1, Math.round(ms / (speed > 0 ? speed : 1)));
}

/**
 * Moves copying to or from one storage at once that keep its disk fully busy: how the sandbox's
 * node_exporter accrues `node_disk_io_time_seconds_total` (./load.ts).
 */
export const SATURATING_MOVES = 4;

/** A storage's busy ratio with `moves` moves running on it (as source or destination), 0 to 1. */
export function busyRatio(moves: number): number {
  return Math.min(1, Math.max(0, moves) / SATURATING_MOVES);
}
