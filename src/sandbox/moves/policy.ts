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

/** GitLab truncates `error_message` to 256 characters. */
export function truncateError(message: string): string {
  return message.length > 256 ? message.slice(0, 256) : message;
}

/**
 * The `error_message` of a move whose source repository does not exist on its storage: Gitaly's
 * `ReplicateRepository` answers `ErrInvalidSourceRepository` (NotFound, `invalid source repository`,
 * `internal/gitaly/service/repository/replicate.go`); GitLab's `wrapped_gitaly_errors` raises it as
 * `Gitlab::Git::Repository::NoRepository`, which prints `<code>:<details>.` (`lib/gitlab/git/base_error.rb`).
 */
export const SOURCE_MISSING_ERROR = '5:invalid source repository.';

/** The `error_message` of a move whose Gitaly node for `storage` does not answer (gRPC UNAVAILABLE). */
export function unavailableError(storage: string): string {
  return `14:connections to all backends failing; last error: UNAVAILABLE: ipv4:127.0.0.1:8075: Failed to connect to remote host: Connection refused (storage "${storage}"). (GRPC::Unavailable)`;
}

/**
 * The `error_message` of a move whose destination fills up during the copy (issue 22). Gitaly's
 * ReplicateRepository creates a repository it does not have from a snapshot: the source streams a
 * tar of the repository and the destination extracts it with `tar -xvf -` into a new repository;
 * on a full disk tar fails (`Cannot write: No space left on device` on its stderr, exit status 2).
 * Gitaly wraps that as `could not create repository from snapshot: creating repository: extracting
 * snapshot: wait for tar: exit status 2` with tar's stderr as error metadata only, not in the text,
 * and answers Internal (13). GitLab's `Gitlab::Git::CommandError` keeps the gRPC message up to
 * ` debug_error_string:` (`13:<details>.`), ReplicateService removes the partial copy, and
 * UpdateRepositoryStorageMethods stores `e.message.truncate(256)` before `do_fail!`. Older Gitaly
 * (14.x, 15.x) put tar's stderr into the text (`wait for tar, stderr: "...", err: exit status 2`).
 * docs/gitlab-behaviour.md §3.1 names the sources.
 */
export const NO_SPACE_ERROR =
  '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2.';

/**
 * Moves copying to or from one storage at once that keep its disk fully busy: how the sandbox's
 * node_exporter accrues `node_disk_io_time_seconds_total` (./load.ts).
 */
export const SATURATING_MOVES = 4;

/** A storage's busy ratio with `moves` moves running on it (as source or destination), 0 to 1. */
export function busyRatio(moves: number): number {
  return Math.min(1, Math.max(0, moves) / SATURATING_MOVES);
}
