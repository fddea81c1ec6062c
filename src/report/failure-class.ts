/**
 * Failure classes: what kind of failure ended a move or quarantined an item, read from GitLab's
 * `error_message` (or our own quarantine reason), and the one remedy for each. Pure, imports
 * nothing, so report/, metrics/ and runtime/ can all read it. The class is computed when reading,
 * from the stored reason, so the checkpoint keeps no class of its own.
 *
 * The messages and where each comes from are in docs/gitlab-behaviour.md §3.5; the remedies in
 * docs/failures.md, one section per class (the anchor is the class name).
 */

/** The classes, in the order docs/failures.md gives them. */
export const FAILURE_CLASSES = [
  'checksum',
  'read-only',
  'lease-held',
  'no-space',
  'source-missing',
  'gitaly-unavailable',
  'stuck-queued',
  'stuck-running',
  'unknown',
] as const;

export type FailureClass = (typeof FAILURE_CLASSES)[number];

export interface FailureRemedy {
  /** A few words for a table cell or a log field. */
  title: string;
  /** The remedy in one line, for `status`, the final report and the HTML report. */
  remedy: string;
  /** Where the whole remedy is: docs/failures.md with the class as anchor. */
  doc: string;
}

const DOC = 'docs/failures.md';

export const FAILURE_REMEDIES: Readonly<Record<FailureClass, FailureRemedy>> = {
  checksum: {
    title: 'checksum mismatch',
    remedy: 'the copy differed from the source and was removed; check the source repository (git fsck), then run again',
    doc: `${DOC}#checksum`,
  },
  'read-only': {
    title: 'read-only left behind',
    remedy:
      'no move runs but the repository stays read-only; in the Rails console: Project.find(ID).set_repository_writable!, then run again',
    doc: `${DOC}#read-only`,
  },
  'lease-held': {
    title: 'lease held',
    remedy:
      "the worker found the repository's lease held (a Sidekiq rerun or a second move); wait for the other move to end, then run again",
    doc: `${DOC}#lease-held`,
  },
  'no-space': {
    title: 'no space on the destination',
    remedy:
      'the destination filled up during the copy; free space or add a storage, lower its weight in the plan, then run again',
    doc: `${DOC}#no-space`,
  },
  'source-missing': {
    title: 'source repository missing',
    remedy:
      "Gitaly has no repository on the source storage; check the project's repository (Rails: Project.find(ID).repository.exists?) before moving it",
    doc: `${DOC}#source-missing`,
  },
  'gitaly-unavailable': {
    title: 'Gitaly unavailable',
    remedy: 'a Gitaly node did not answer; check /-/readiness and the Gitaly nodes of both storages, then run again',
    doc: `${DOC}#gitaly-unavailable`,
  },
  'stuck-queued': {
    title: 'stuck queued',
    remedy:
      'the move never left the queue; check Sidekiq (the update_repository_storage queues), then run again once it is picked up',
    doc: `${DOC}#stuck-queued`,
  },
  'stuck-running': {
    title: 'stuck running',
    remedy:
      'the move stays started and the repository read-only; check its Sidekiq job, then make it writable in the Rails console',
    doc: `${DOC}#stuck-running`,
  },
  unknown: {
    title: 'unknown',
    remedy: "read the error message and GitLab's logs for the move (Sidekiq, exceptions_json); retrying often helps",
    doc: `${DOC}#unknown`,
  },
};

/** GitLab's checksum check after replication (`UpdateRepositoryStorage|` and `ReplicateService|` keys). */
const CHECKSUM = /Failed to verify \S+ repository checksum from /i;
/** Gitaly's replication out of room: the newest text (tar's exit status) and older texts (tar's stderr). */
const NO_SPACE_NEWEST =
  'could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2';
const NO_SPACE_OLDER = /no space left on device/i;
/** Gitaly's `ErrInvalidSourceRepository` (NotFound), as GitLab's `NoRepository` prints it: `5:invalid source repository.` */
const SOURCE_MISSING = /invalid source repository/i;
/** A gRPC UNAVAILABLE as GitLab's CommandError prints it (`14:<details>.`), or the class named. */
const UNAVAILABLE = /^14:|GRPC::Unavailable|failed to connect to all addresses|connections to all backends failing/i;
/** Our reasons (src/actors/drain-outcome.ts, src/actors/reconcile.ts), and the schedule refusal. */
const NO_MESSAGE = /^move \d+ failed without an error message$/;
const READ_ONLY_OURS = 'repository is read-only but no move is running for it';
const READ_ONLY_REFUSED = /^schedule rejected: .*is read-only/;
const STUCK = /^stuck: move \d+ still (\S+)/;

/**
 * The class of a failure from its text: GitLab's `error_message` of a failed move, or the reason
 * an item was quarantined with (which is that message, or one of ours). `null`, and a move failed
 * without a message, are `lease-held`: GitLab's worker fails a move with no message only when it
 * cannot take the repository's lease.
 */
export function classifyFailure(text: string | null): FailureClass {
  if (text === null) return 'lease-held';
  const stuck = STUCK.exec(text);
  if (stuck)
    return text.includes('in the queue') || stuck[1] === 'scheduled' || stuck[1] === 'initial'
      ? 'stuck-queued'
      : 'stuck-running';
  if (NO_MESSAGE.test(text)) return 'lease-held';
  if (text === READ_ONLY_OURS || READ_ONLY_REFUSED.test(text)) return 'read-only';
  if (CHECKSUM.test(text)) return 'checksum';
  if (text.includes(NO_SPACE_NEWEST) || NO_SPACE_OLDER.test(text)) return 'no-space';
  if (SOURCE_MISSING.test(text)) return 'source-missing';
  if (UNAVAILABLE.test(text)) return 'gitaly-unavailable';
  return 'unknown';
}

/** The class and its remedy, as `status --json` gives them. */
export function describeFailure(text: string | null): { class: FailureClass; remedy: string; doc: string } {
  const c = classifyFailure(text);
  const r = FAILURE_REMEDIES[c];
  return { class: c, remedy: r.remedy, doc: r.doc };
}
