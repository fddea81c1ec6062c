import { describe, expect, it } from 'vitest';
import { auditEvent as ev } from '../../test/support/audit-event.js';
import { isMoveEvent, MoveLedger, spanSeconds } from './moves.js';

describe('MoveLedger', () => {
  it("pairs each move's first sighting with its end, per kind, and keeps GitLab's error message", () => {
    const l = new MoveLedger();
    expect(
      l.add(
        ev(1000, 'move.scheduled', { kind: 'projects', source: 'nfs-1', id: 7, moveId: 1, moveState: 'scheduled' }),
      ),
    ).toBeNull();
    // The same move id in another kind is another move (GitLab keeps one table per kind).
    l.add(ev(1100, 'bulk.move_seen', { kind: 'snippets', source: 'nfs-1', id: 3, moveId: 1, moveState: 'started' }));
    // A later start event for a known move does not move its start.
    l.add(
      ev(1500, 'move.adopted', {
        kind: 'projects',
        source: 'nfs-1',
        id: 7,
        moveId: 1,
        moveState: 'started',
        cause: 'resume',
      }),
    );
    const ended = l.add(
      ev(4000, 'move.failed', { kind: 'projects', source: 'nfs-1', id: 7, moveId: 1, error: 'Gitaly said no' }),
    );
    expect(ended).toMatchObject({
      kind: 'projects',
      itemId: 7,
      startAt: 1000,
      endAt: 4000,
      end: 'failed',
      error: 'Gitaly said no',
    });
    expect(spanSeconds(ended!)).toBe(3);
    const snippet = l.add(ev(2100, 'move.finished', { kind: 'snippets', source: 'nfs-1', id: 3, moveId: 1 }));
    expect(snippet).toMatchObject({ end: 'finished', startAt: 1100 });
    expect(l.spans()).toHaveLength(2);
  });

  it('knows an end whose start it never saw (a resumed reader), and ignores other events', () => {
    const l = new MoveLedger();
    const s = l.add(ev(5000, 'move.cleanup_failed', { kind: 'groups', source: 'a', id: 2, moveId: 9, error: null }));
    expect(s).toMatchObject({ startAt: null, end: 'cleanup_failed', error: null });
    expect(spanSeconds(s!)).toBeNull();
    expect(
      l.add(
        ev(5000, 'item.retry', { kind: 'groups', source: 'a', id: 2, attempts: 1, nextAttemptAt: 6000, reason: 'x' }),
      ),
    ).toBeNull();
    expect(
      isMoveEvent(ev(1, 'move.intent', { kind: 'groups', source: 'a', id: 2, attempt: 1, destination: 'b' })),
    ).toBe(false);
    expect(
      isMoveEvent(
        ev(1, 'move.stuck', {
          kind: 'groups',
          source: 'a',
          id: 2,
          moveId: 9,
          moveState: 'started',
          since: 0,
          phase: 'running',
          limitMs: 1,
        }),
      ),
    ).toBe(true);
  });

  it('forgets ended moves but keeps open and stuck ones', () => {
    const l = new MoveLedger();
    l.add(ev(1, 'move.scheduled', { kind: 'projects', source: 'a', id: 1, moveId: 1, moveState: 'scheduled' }));
    l.add(ev(1, 'move.scheduled', { kind: 'projects', source: 'a', id: 2, moveId: 2, moveState: 'scheduled' }));
    l.add(ev(1, 'move.scheduled', { kind: 'projects', source: 'a', id: 3, moveId: 3, moveState: 'scheduled' }));
    l.add(ev(2, 'move.finished', { kind: 'projects', source: 'a', id: 1, moveId: 1 }));
    l.add(
      ev(2, 'move.stuck', {
        kind: 'projects',
        source: 'a',
        id: 2,
        moveId: 2,
        moveState: 'started',
        since: 0,
        phase: 'running',
        limitMs: 1,
      }),
    );
    l.dropEnded();
    expect(
      l
        .spans()
        .map((s) => s.moveId)
        .sort(),
    ).toEqual([2, 3]);
  });
});
