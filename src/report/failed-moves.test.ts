import { describe, expect, it } from 'vitest';
import type { AuditEventOf } from '../events/vocabulary.js';
import { failedMoveLines, failedMoves } from './failed-moves.js';

type Ev = AuditEventOf<'move.failed'> | AuditEventOf<'item.retry'> | AuditEventOf<'move.quarantined'>;
const failed = (seq: number, id: number, moveId: number, error: string | null): Ev => ({
  seq,
  at: seq * 1000,
  type: 'move.failed',
  data: { kind: 'projects', source: 'nfs-1', id, moveId, error },
});
const retry = (seq: number, id: number, attempts: number): Ev => ({
  seq,
  at: seq * 1000,
  type: 'item.retry',
  data: { kind: 'projects', source: 'nfs-1', id, attempts, nextAttemptAt: seq * 1000 + 500, reason: 'x' },
});
const quarantined = (seq: number, id: number, attempts: number): Ev => ({
  seq,
  at: seq * 1000,
  type: 'move.quarantined',
  data: { kind: 'projects', source: 'nfs-1', id, attempts, reason: 'x' },
});

const CHECKSUM = 'Failed to verify project repository checksum from abc to 000';

describe('failedMoves', () => {
  it('pairs each failed move with the attempt and outcome recorded after it for the same item, newest first', () => {
    // Newest first, as the store gives them; items 7 and 8 interleaved; the newest failure has no outcome yet.
    const events: Ev[] = [
      failed(9, 8, 81, null),
      quarantined(8, 7, 3),
      failed(7, 7, 72, CHECKSUM),
      retry(6, 8, 1),
      retry(5, 7, 2),
      failed(4, 8, 80, '14:connections to all backends failing.'),
      failed(3, 7, 71, CHECKSUM),
    ];
    const moves = failedMoves(events, (_k, id) => (id === 7 ? 'g/p7' : null));
    expect(moves.map((m) => [m.moveId, m.attempt, m.then, m.class, m.name])).toEqual([
      [81, null, null, 'lease-held', null],
      [72, 3, 'quarantined', 'checksum', 'g/p7'],
      [80, 1, 'retry', 'gitaly-unavailable', null],
      [71, 2, 'retry', 'checksum', 'g/p7'],
    ]);
    expect(moves[1]!.error).toBe(CHECKSUM);
    expect(failedMoves(events, () => null, 2)).toHaveLength(2);
  });

  it("reads as lines with GitLab's message and the remedy, and as nothing when no move failed", () => {
    const lines = failedMoveLines(failedMoves([retry(2, 7, 1), failed(1, 7, 70, CHECKSUM)], () => 'g/p7'));
    expect(lines).toEqual([
      '',
      'Failed moves (1, newest first; the failure breaker counts these):',
      '  1970-01-01T00:00:01.000Z projects 7 g/p7 on nfs-1: move 70, attempt 1, retried from 1970-01-01T00:00:02.500Z',
      `    GitLab: ${CHECKSUM}`,
      expect.stringMatching(/^ {4}checksum: the copy differed .*\(docs\/failures\.md#checksum\)$/),
    ]);
    expect(failedMoveLines([])).toEqual([]);
  });
});
