/**
 * The exception a move's copy ends with, by fate and release, as the message GitLab's service
 * raises (untruncated: it is what Sidekiq's log shows; the move record stores
 * `e.message.truncate(256)` from 16.7, ./releases.ts). Pure.
 *
 * A Gitaly error reaches the service through `wrapped_gitaly_errors`: NotFound becomes
 * `NoRepository`, DeadlineExceeded `CommandTimedOut`, any other status `CommandError`, each
 * printing `<gRPC code>:<details>.` (`lib/gitlab/git/wraps_gitaly_errors.rb`, `base_error.rb`).
 */
import type { ItemKind } from '../db.js';
import { DEADLINE_EXCEEDED_ERROR, tarFailureMessage } from './releases.js';

/**
 * Gitaly's `ReplicateRepository` answers `ErrInvalidSourceRepository` (NotFound, `invalid source
 * repository`, `internal/gitaly/service/repository/replicate.go`) when the source does not exist.
 */
export const SOURCE_MISSING_ERROR = '5:invalid source repository.';

/** A move whose Gitaly node for `storage` does not answer (gRPC UNAVAILABLE). */
export function unavailableError(storage: string): string {
  return `14:connections to all backends failing; last error: UNAVAILABLE: ipv4:127.0.0.1:8075: Failed to connect to remote host: Connection refused (storage "${storage}"). (GRPC::Unavailable)`;
}

/**
 * The repository type a container's move replicates, as `Gitlab::GlRepository` names it in
 * `Failed to verify <type> repository checksum`: a group's repository is its wiki
 * (`Groups::UpdateRepositoryStorageService` mirrors `GlRepository::WIKI`).
 */
const REPOSITORY_TYPE: Record<ItemKind, string> = { project: 'project', snippet: 'snippet', group: 'wiki' };

/** What a failing copy needs to know about its move. */
export interface FailingCopy {
  kind: ItemKind;
  fate: string;
  destination: string;
}

/**
 * The exception that ends a copy of `move` on an instance of `version` (the snapshot's checksum
 * given for a checksum failure), or null when the fate does not fail the copy with one.
 */
export function copyFailureMessage(move: FailingCopy, snapshotChecksum: string, version: string): string | null {
  switch (move.fate) {
    case 'fail':
      return `Failed to verify ${REPOSITORY_TYPE[move.kind]} repository checksum from ${snapshotChecksum} to 0000000000000000000000000000000000000000`;
    case 'no_space':
    case 'no_space_wiki':
      return tarFailureMessage(version, 'no-space');
    case 'tar_cut_short':
      return tarFailureMessage(version, 'cut-short');
    case 'deadline_exceeded':
      return DEADLINE_EXCEEDED_ERROR;
    case 'source_missing':
      return SOURCE_MISSING_ERROR;
    case 'unavailable':
      return unavailableError(move.destination);
    default:
      return null;
  }
}
