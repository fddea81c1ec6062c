import { describe, expect, it } from 'vitest';
import {
  FAILURE_CLASSES,
  FAILURE_REMEDIES,
  NO_REASON_BEFORE_16_7,
  classifyFailure,
  describeFailure,
  noteNoSpace,
} from './failure-class.js';

const TAR_16_1 =
  '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2.';
/** Gitaly 16.0's text quotes tar's stderr; GitLab keeps 253 characters and `...`. */
const TAR_16_0_TRUNCATED =
  '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar, stderr: "tar: objects/pack/pack-8f1c0d2e5a7b9c3d4e6f8a0b1c2d3e4f5a6b7c8d.pack: Cannot write: No space left on device\\ntar: Exiting with failure status due to pr...';

// Real strings: GitLab's error_message as its code builds them (docs/gitlab-behaviour.md §3.5), and our own reasons.
const CASES: [string | null, string][] = [
  [
    'Failed to verify project repository checksum from 5f0d5c1e0e3b2a8f49c1d0b0c2e6e4a3f1b2c3d4 to 0000000000000000000000000000000000000000',
    'checksum',
  ],
  ['Failed to verify wiki repository checksum from abc to def', 'checksum'],
  ['Failed to verify design repository checksum from abc to def', 'checksum'],
  ['Failed to verify snippet repository checksum from abc to def', 'checksum'],
  ['Failed to verify object_pool repository checksum from abc to def', 'checksum'],
  ['repository is read-only but no move is running for it', 'read-only'],
  ['schedule rejected: {"project":["is read-only"]}', 'read-only'],
  [null, 'lease-held'],
  ['move 41 failed without an error message', 'lease-held'],
  // tar's exit status 2 is its generic fatal error: no space only when something confirms it.
  [TAR_16_1, 'tar-failed'],
  [
    `${TAR_16_1} (shardmove: the destination cluster has 12.0MiB free, less than the 40.0MiB this copy needs)`,
    'no-space',
  ],
  [TAR_16_0_TRUNCATED, 'no-space'],
  [
    '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar, stderr: "tar: Unexpected EOF in archive\\ntar: Error is not recoverable: exiting now\\n", err: exit status 2.',
    'tar-failed',
  ],
  ['4:Deadline Exceeded.', 'timeout'],
  [
    '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar, stderr: "tar: objects/pack/pack-1.pack: Cannot write: No space left on device\\ntar: Exiting with failure status due to previous errors\\n", err: exit status 2.',
    'no-space',
  ],
  ['5:invalid source repository.', 'source-missing'],
  [
    '14:failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.7:8075: Failed to connect to remote host: Connection refused.',
    'gitaly-unavailable',
  ],
  [
    '14:connections to all backends failing; last error: UNAVAILABLE: ipv4:127.0.0.1:8075: Failed to connect to remote host: Connection refused (storage "nfs-2"). (GRPC::Unavailable)',
    'gitaly-unavailable',
  ],
  ['stuck: move 7 still scheduled after 7201s in the queue (poll.stuck_scheduled_after 2h)', 'stuck-queued'],
  ['stuck: move 7 still started after 3601s running (poll.stuck_running_after 1h)', 'stuck-running'],
  ['stuck: move 7 still replicated', 'stuck-running'],
  ['Timeout waiting for project repository pushes', 'unknown'],
  ['schedule rejected: {"destination_storage_name":["is not included in the list"]}', 'unknown'],
  [
    'hidden or pending deletion: GitLab 16.2.0 answers 404 for it on every per-item move route (they find such projects from 16.7), and only the bulk move of nfs-1 reaches it, which move.select forbids (a bulk move takes everything on the storage)',
    'hidden-unreachable',
  ],
];

describe('classifyFailure', () => {
  it.each(CASES)('%s is %s', (text, expected) => {
    expect(classifyFailure(text)).toBe(expected);
  });

  it('truncated by GitLab (253 characters and ...), a message still classifies', () => {
    const long = `14:failed to connect to all addresses; last error: UNAVAILABLE: ${'x'.repeat(300)}`;
    expect(classifyFailure(`${long.slice(0, 253)}...`)).toBe('gitaly-unavailable');
    expect(classifyFailure(`Failed to verify project repository checksum from ${'a'.repeat(240)}...`)).toBe('checksum');
  });

  it('before 16.7 a failed move without a reason is unknown, pointing at the Sidekiq log, never lease-held', () => {
    for (const version of ['15.11.0', '16.0.0', '16.5.1', '16.6.3']) {
      expect(classifyFailure(null, version), version).toBe('unknown');
      expect(classifyFailure('move 41 failed without an error message', version), version).toBe('unknown');
      expect(describeFailure(null, version)).toEqual({ class: 'unknown', ...NO_REASON_BEFORE_16_7 });
    }
    expect(NO_REASON_BEFORE_16_7.remedy).toMatch(
      /^GitLab recorded no reason before 16\.7: .*Projects::UpdateRepositoryStorageWorker/,
    );
    for (const version of ['16.7.0', '17.11.0', null, undefined, 'nonsense'])
      expect(classifyFailure(null, version), String(version)).toBe('lease-held');
    // Our own reasons and the schedule refusals keep their classes on every release.
    expect(classifyFailure('repository is read-only but no move is running for it', '16.0.0')).toBe('read-only');
    expect(classifyFailure('stuck: move 7 still started', '16.0.0')).toBe('stuck-running');
  });

  it("notes no space on a tar failure only when the destination's free space is below what the copy needs", () => {
    const mib = 1024 * 1024;
    expect(classifyFailure(noteNoSpace(TAR_16_1, 'cluster', 12 * mib, 40 * mib))).toBe('no-space');
    expect(noteNoSpace(TAR_16_1, 'cluster', 12 * mib, 40 * mib)).toBe(
      `${TAR_16_1} (shardmove: the destination cluster has 12.0MiB free, less than the 40.0MiB this copy needs)`,
    );
    expect(noteNoSpace(TAR_16_1, 'cluster', 80 * mib, 40 * mib)).toBe(TAR_16_1);
    expect(noteNoSpace('5:invalid source repository.', 'cluster', 0, 40 * mib)).toBe('5:invalid source repository.');
  });

  it('covers every class, each with one remedy pointing at its section of docs/failures.md', () => {
    expect(new Set(CASES.map(([, c]) => c))).toEqual(new Set(FAILURE_CLASSES));
    for (const c of FAILURE_CLASSES) expect(FAILURE_REMEDIES[c].doc).toBe(`docs/failures.md#${c}`);
    expect(describeFailure('5:invalid source repository.')).toMatchObject({
      class: 'source-missing',
      doc: 'docs/failures.md#source-missing',
    });
  });
});
