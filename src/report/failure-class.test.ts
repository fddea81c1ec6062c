import { describe, expect, it } from 'vitest';
import { FAILURE_CLASSES, FAILURE_REMEDIES, classifyFailure, describeFailure } from './failure-class.js';

// Real strings: GitLab's error_message as its code builds them (docs/gitlab-behaviour.md §3.5), and our own reasons.
const CASES: [string | null, string][] = [
  [
    'Failed to verify project repository checksum from 5f0d5c1e0e3b2a8f49c1d0b0c2e6e4a3f1b2c3d4 to 0000000000000000000000000000000000000000',
    'checksum',
  ],
  ['Failed to verify wiki repository checksum from abc to def', 'checksum'],
  ['repository is read-only but no move is running for it', 'read-only'],
  ['schedule rejected: {"project":["is read-only"]}', 'read-only'],
  [null, 'lease-held'],
  ['move 41 failed without an error message', 'lease-held'],
  [
    '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2.',
    'no-space',
  ],
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
];

describe('classifyFailure', () => {
  it.each(CASES)('%s is %s', (text, expected) => {
    expect(classifyFailure(text)).toBe(expected);
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
