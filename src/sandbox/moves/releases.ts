/**
 * How repository storage moves differ between GitLab releases, as pure functions of the seed's
 * `instance.version` (or `shardmove sandbox --gitlab-version`). The sources are named in
 * docs/gitlab-behaviour.md §3.1 and §3.5; boundaries that could not be pinned are marked there.
 *
 * - `error_message` on move records: the column came in 16.7 (migrations
 *   `AddErrorTo{Project,Snippet,Group}RepositoryStorageMoves`, `milestone '16.7'`). Before it,
 *   `UpdateRepositoryStorageMethods#execute` calls `do_fail!` and re-raises with
 *   `track_and_raise_exception`: the reason reaches only Sidekiq's log, and the move entity has no
 *   such field.
 * - The exclusive lease on a container's move (`UpdateRepositoryStorageWorker`, GitLab issue 429049):
 *   taken as 16.6. Before it, the worker runs every job it is given: a second move of a container
 *   is not refused, and a Sidekiq rerun of an interrupted job finds the move `started` and does
 *   nothing (the service acts only on a `scheduled` move), so the move stays `started`.
 * - Gitaly's text for a failed snapshot extraction: `wait for tar, stderr: %q, err: %w` up to 16.0,
 *   `wait for tar: %w` with tar's stderr as error metadata only from 16.1 (`structerr`).
 * - `e.message.truncate(256)`: ActiveSupport keeps 253 characters and appends `...`.
 * - Hidden and pending-delete projects on the per-item project move routes: GitLab MR 135748
 *   (issue 430064) made `API::ProjectRepositoryStorageMoves` override `find_project_scopes` with
 *   plain `Project`. Before it those routes find projects with the default
 *   `Project.without_deleted.not_hidden`, so `GET` and `POST /projects/:id/repository_storage_moves`
 *   answer 404 `Project Not Found` for them; only the bulk service (`ProjectRepository.for_shard`)
 *   reaches them. Whether the MR shipped in 16.6 or 16.7 is not settled: taken as 16.7, so that
 *   16.6 shows the older, harder case.
 */
import { atLeast, parseRelease } from '../auth/token-types.js';

/** The first release whose move records carry `error_message`. */
export const ERROR_MESSAGE_SINCE = [16, 7] as const;
/** The first release whose move worker takes the container's exclusive lease (16.6 or 16.7: taken as 16.6). */
export const MOVE_LEASE_SINCE = [16, 6] as const;
/** The first release whose per-item project move routes find hidden and pending-delete projects (16.6 or 16.7: taken as 16.7). */
export const MOVE_ROUTES_FIND_HIDDEN_SINCE = [16, 7] as const;
/** The first Gitaly release that keeps tar's stderr out of the replication error's text. */
const TAR_STDERR_IN_METADATA_SINCE = [16, 1] as const;

/** Whether move records of `version` have `error_message` (the API field and the column behind it). */
export function recordsErrorMessage(version: string): boolean {
  return atLeast(parseRelease(version), ERROR_MESSAGE_SINCE);
}

/** Whether the move worker of `version` refuses a job whose container's lease is held. */
export function hasMoveLease(version: string): boolean {
  return atLeast(parseRelease(version), MOVE_LEASE_SINCE);
}

/**
 * Whether the per-item project move routes of `version` find hidden and pending-delete projects
 * (`find_project_scopes` overridden); before that they look projects up in GitLab's default scope.
 */
export function moveRoutesFindHidden(version: string): boolean {
  return atLeast(parseRelease(version), MOVE_ROUTES_FIND_HIDDEN_SINCE);
}

/** Why tar failed: the disk filled up, or the snapshot stream ended early. */
export type TarCause = 'no-space' | 'cut-short';

/** What GNU tar writes on its stderr under `tar -xvf -` for each cause. */
const TAR_STDERR: Record<TarCause, string> = {
  'no-space':
    'tar: objects/pack/pack-8f1c0d2e5a7b9c3d4e6f8a0b1c2d3e4f5a6b7c8d.pack: Cannot write: No space left on device\n' +
    'tar: Exiting with failure status due to previous errors\n',
  'cut-short': 'tar: Unexpected EOF in archive\ntar: Error is not recoverable: exiting now\n',
};

/** Go's `%q` of a string: double quotes, with backslash, quote and newline escaped. */
function goQuote(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/**
 * The message GitLab's `Gitlab::Git::CommandError` makes of Gitaly's ReplicateRepository failing to
 * extract the snapshot into a new repository (`13:<details>.`, the ` debug_error_string:` part
 * cut off), untruncated. Tar exits with status 2 on any fatal error: a full disk, but also a
 * snapshot stream cut short, which ends the same way.
 */
export function tarFailureMessage(version: string, cause: TarCause): string {
  const prefix = '13:could not create repository from snapshot: creating repository: extracting snapshot: ';
  if (atLeast(parseRelease(version), TAR_STDERR_IN_METADATA_SINCE)) return `${prefix}wait for tar: exit status 2.`;
  return `${prefix}wait for tar, stderr: ${goQuote(TAR_STDERR[cause])}, err: exit status 2.`;
}

/**
 * A Gitaly call outside Puma that ran past `GitalyClient.long_timeout` (6 hours): GRPC's
 * DeadlineExceeded, raised as `Gitlab::Git::CommandTimedOut` (a CommandError).
 */
export const DEADLINE_EXCEEDED_ERROR = '4:Deadline Exceeded.';

/** ActiveSupport's `truncate(256)`: longer text keeps its first 253 characters and ends in `...`. */
export function truncateError(message: string): string {
  return message.length > 256 ? `${message.slice(0, 253)}...` : message;
}
