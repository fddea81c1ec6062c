/**
 * Failure classes: what kind of failure ended a move or quarantined an item, read from GitLab's
 * `error_message` (or our own quarantine reason), and the one remedy for each. Pure, imports
 * nothing, so report/, metrics/ and runtime/ can all read it. The class is computed when reading,
 * from the stored reason and the instance's release (what pre-flight read from `GET /version`),
 * so the checkpoint keeps no class of its own.
 *
 * Releases: before 16.7 GitLab records no `error_message` on a move at all, so a failed move
 * without one says nothing there (class `unknown`, its reason in Sidekiq's log); from 16.7 a move
 * failed without one was failed by the worker's lease (`lease-held`).
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
  'tar-failed',
  'source-missing',
  'gitaly-unavailable',
  'timeout',
  'stuck-queued',
  'stuck-running',
  'unknown',
  'hidden-unreachable',
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

/** Each class's words; its doc is the class's anchor in docs/failures.md. */
const REMEDY_WORDS: Readonly<Record<FailureClass, Omit<FailureRemedy, 'doc'>>> = {
  checksum: {
    title: 'checksum mismatch',
    remedy: 'the copy differed from the source and was removed; check the source repository (git fsck), then run again',
  },
  'read-only': {
    title: 'read-only left behind',
    remedy:
      'no move runs but the repository stays read-only; in the Rails console: Project.find(ID).set_repository_writable!, then run again',
  },
  'lease-held': {
    title: 'lease held',
    remedy:
      "the worker found the repository's lease held (a Sidekiq rerun or a second move); wait for the other move to end, then run again",
  },
  'no-space': {
    title: 'no space on the destination',
    remedy:
      'the destination filled up during the copy; free space or add a storage, lower its weight in the plan, then run again',
  },
  'tar-failed': {
    title: 'a copy failure in tar',
    remedy:
      "tar failed extracting the copy on the destination (exit status 2: a full disk, or a snapshot stream cut short); check the destination's free space and Gitaly's log for the move, then run again",
  },
  'source-missing': {
    title: 'source repository missing',
    remedy:
      "Gitaly has no repository on the source storage; check the project's repository (Rails: Project.find(ID).repository.exists?) before moving it",
  },
  'gitaly-unavailable': {
    title: 'Gitaly unavailable',
    remedy: 'a Gitaly node did not answer; check /-/readiness and the Gitaly nodes of both storages, then run again',
  },
  timeout: {
    title: 'Gitaly call timed out',
    remedy:
      'a Gitaly call ran past its 6-hour limit (4:Deadline Exceeded.); check the size of the repository and the load on both Gitaly nodes, then run again at a quieter time',
  },
  'stuck-queued': {
    title: 'stuck queued',
    remedy:
      'the move never left the queue; check Sidekiq (the update_repository_storage queues), then run again once it is picked up',
  },
  'stuck-running': {
    title: 'stuck running',
    remedy:
      'the move stays started and the repository read-only; check its Sidekiq job, then make it writable in the Rails console',
  },
  'hidden-unreachable': {
    title: 'hidden or pending deletion',
    remedy:
      'before 16.7 GitLab finds hidden and pending-delete projects only through the bulk move of their storage: run a plan for that storage without move.select, move.until or --only (it moves them by the bulk move), or upgrade to 16.7 or later, then run again with --retry-quarantined',
  },
  unknown: {
    title: 'unknown',
    remedy: "read the error message and GitLab's logs for the move (Sidekiq, exceptions_json); retrying often helps",
  },
};

export const FAILURE_REMEDIES = Object.fromEntries(
  FAILURE_CLASSES.map((c) => [c, { ...REMEDY_WORDS[c], doc: `${DOC}#${c}` }]),
) as Readonly<Record<FailureClass, FailureRemedy>>;

/**
 * GitLab's checksum check after replication (`UpdateRepositoryStorage|` and `ReplicateService|`
 * keys); the type is `project`, `wiki` (a group's too), `design`, `snippet` or `object_pool`.
 */
const CHECKSUM = /Failed to verify \S+ repository checksum from /i;
/**
 * Gitaly's snapshot extraction ending with tar's exit status 2: tar's generic fatal error, a full
 * disk or a stream cut short alike. From 16.1 the text has no more; 16.0 and older quote tar's
 * stderr, where a full disk says `No space left on device`.
 */
const TAR = /wait for tar\b/i;
const NO_SPACE = /no space left on device/i;
/** Our note on a tar failure when the destination's free space confirms it was full (noteNoSpace). */
const NO_SPACE_NOTED = /\(shardmove: the destination \S+ has \S+ free, less than the \S+ this copy needs\)/;
/** GRPC's DeadlineExceeded (`GitalyClient.long_timeout`, 6 hours outside Puma) as CommandTimedOut prints it. */
const TIMEOUT = /^4:Deadline Exceeded|GRPC::DeadlineExceeded/i;
/** Gitaly's `ErrInvalidSourceRepository` (NotFound), as GitLab's `NoRepository` prints it: `5:invalid source repository.` */
const SOURCE_MISSING = /invalid source repository/i;
/** A gRPC UNAVAILABLE as GitLab's CommandError prints it (`14:<details>.`), or the class named. */
const UNAVAILABLE = /^14:|GRPC::Unavailable|failed to connect to all addresses|connections to all backends failing/i;
/** Our reasons (src/actors/drain/outcome.ts, src/actors/drain/reconcile.ts), and the schedule refusal. */
const NO_MESSAGE = /^move \d+ failed without an error message$/;
const READ_ONLY_OURS = 'repository is read-only but no move is running for it';
const READ_ONLY_REFUSED = /^schedule rejected: .*is read-only/;
const STUCK = /^stuck: move \d+ still (\S+)/;
/** Our reason for a project no per-item move route reaches (src/actors/drain/unreachable.ts). */
const UNREACHABLE = /^hidden or pending deletion: /;

/** The first release whose move records carry `error_message` (migration milestone 16.7). */
const ERROR_MESSAGE_SINCE: readonly [number, number] = [16, 7];

/**
 * Whether GitLab `version` records a failed move's reason. Unknown or unreadable versions count
 * as new ones (an old checkpoint has none).
 */
export function recordsMoveErrors(version: string | null | undefined): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? '');
  if (!m) return true;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major !== ERROR_MESSAGE_SINCE[0] ? major > ERROR_MESSAGE_SINCE[0] : minor >= ERROR_MESSAGE_SINCE[1];
}

/** The remedy of a failed move with no reason on a release that records none. */
export const NO_REASON_BEFORE_16_7: FailureRemedy = {
  title: 'GitLab recorded no reason before 16.7',
  remedy:
    "GitLab recorded no reason before 16.7: find the move's job in the Sidekiq log of Projects::UpdateRepositoryStorageWorker (Snippets:: or Groups:: for other kinds) and its exception in exceptions_json.log, then run again",
  doc: `${DOC}#unknown`,
};

/** Whether `text` is a failed move without GitLab's reason (null, or our words for it). */
function withoutReason(text: string | null): boolean {
  return text === null || NO_MESSAGE.test(text);
}

/**
 * The class of a failure from its text: GitLab's `error_message` of a failed move, or the reason
 * an item was quarantined with (which is that message, or one of ours), on the instance's release
 * `version` (from pre-flight; unknown counts as new). `null`, and a move failed without a message,
 * are `lease-held` from 16.7 (GitLab's worker fails a move with no message only when it cannot take
 * the repository's lease) and `unknown` before it (no move has a message there). A message
 * truncated by GitLab (253 characters and `...`) classifies by what is left.
 */
export function classifyFailure(text: string | null, version?: string | null): FailureClass {
  if (text === null || NO_MESSAGE.test(text)) return recordsMoveErrors(version) ? 'lease-held' : 'unknown';
  const stuck = STUCK.exec(text);
  if (stuck)
    return text.includes('in the queue') || stuck[1] === 'scheduled' || stuck[1] === 'initial'
      ? 'stuck-queued'
      : 'stuck-running';
  if (text === READ_ONLY_OURS || READ_ONLY_REFUSED.test(text)) return 'read-only';
  if (UNREACHABLE.test(text)) return 'hidden-unreachable';
  if (CHECKSUM.test(text)) return 'checksum';
  if (NO_SPACE.test(text) || NO_SPACE_NOTED.test(text)) return 'no-space';
  if (TAR.test(text)) return 'tar-failed';
  if (SOURCE_MISSING.test(text)) return 'source-missing';
  if (UNAVAILABLE.test(text)) return 'gitaly-unavailable';
  if (TIMEOUT.test(text)) return 'timeout';
  return 'unknown';
}

/** The class and its remedy, as `status --json` and the final report give them. */
export function describeFailure(
  text: string | null,
  version?: string | null,
): { class: FailureClass; title: string; remedy: string; doc: string } {
  const c = classifyFailure(text, version);
  const r = c === 'unknown' && withoutReason(text) ? NO_REASON_BEFORE_16_7 : FAILURE_REMEDIES[c];
  return { class: c, title: r.title, remedy: r.remedy, doc: r.doc };
}

/** Whether `text` is Gitaly's tar failure, whose cause only the destination's free space tells. */
export function isTarFailure(text: string | null): boolean {
  return text !== null && TAR.test(text) && !NO_SPACE.test(text);
}

/** Bytes as the note gives them: MiB, GiB or TiB with one decimal. */
function bytesText(n: number): string {
  const units = [
    ['TiB', 1024 ** 4],
    ['GiB', 1024 ** 3],
  ] as const;
  for (const [u, size] of units) if (n >= size) return `${(n / size).toFixed(1)}${u}`;
  return `${(n / 1024 ** 2).toFixed(1)}MiB`;
}

/**
 * A tar failure's text with our note that the destination's free space confirms it was out of
 * room (`freeBytes` below what the copy needs), which makes it `no-space`; unchanged otherwise.
 */
export function noteNoSpace(text: string, destination: string, freeBytes: number, needBytes: number): string {
  if (!isTarFailure(text) || freeBytes >= needBytes) return text;
  return `${text} (shardmove: the destination ${destination} has ${bytesText(Math.max(0, freeBytes))} free, less than the ${bytesText(needBytes)} this copy needs)`;
}
