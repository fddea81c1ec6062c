import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { ItemRecord } from '../api/types.js';
import { openCheckpoint } from './checkpoint.js';
import { SCHEMA_VERSION, migrate } from './schema.js';

const dirs: string[] = [];
function tempFile(): string {
  const d = mkdtempSync(join(tmpdir(), 'sm-store-'));
  dirs.push(d);
  return join(d, 'run.db');
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const item = (id: number): ItemRecord => ({
  kind: 'projects',
  id,
  storage: 'nfs-1',
  name: `g/p${id}`,
  sizeBytes: null,
});

describe('run-level checkpoint', () => {
  it('saves and loads the run snapshot', () => {
    const s = openCheckpoint(':memory:');
    expect(s.loadRun()).toBeNull();
    s.saveRun({ planName: 'x', planHash: 'h1', machineVersion: 1, snapshot: { value: 'drain', context: { a: [1] } } });
    s.saveRun({ planName: 'x', planHash: 'h2', machineVersion: 2, snapshot: { value: 'verify' } });
    expect(s.loadRun()).toEqual({
      planName: 'x',
      planHash: 'h2',
      machineVersion: 2,
      snapshot: { value: 'verify' },
      plan: null,
    });
    // The plan the hash covers is kept beside it (schema 17), to name what changed later.
    s.saveRun({ planName: 'x', planHash: 'h3', machineVersion: 2, snapshot: {}, plan: '{"move":{"concurrency":4}}' });
    expect(s.loadRun()?.plan).toBe('{"move":{"concurrency":4}}');
    s.close();
  });

  it('refuses a lock held by a live process and names the holder', () => {
    const file = tempFile();
    const a = openCheckpoint(file);
    a.acquireLock({ pid: 111, host: 'h', startedAt: 1 }, () => true);
    const b = openCheckpoint(file);
    let err: unknown;
    try {
      b.acquireLock({ pid: 222, host: 'h', startedAt: 2 }, () => true);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'SHARDMOVE_LOCKED', holder: { pid: 111, host: 'h', startedAt: 1 } });
    expect(String((err as Error).message)).toContain('111');
    // A lock on another host is never taken over, even if that pid is dead here.
    expect(() => b.acquireLock({ pid: 222, host: 'other', startedAt: 2 }, () => false)).toThrow(/locked by pid 111/);
    b.close();
    a.close();
  });

  it('takes over a stale lock from a dead process, and release lets the next run in', () => {
    const file = tempFile();
    const a = openCheckpoint(file);
    a.acquireLock({ pid: 111, host: 'h', startedAt: 1 }, () => true);
    // a is "killed": its lock row stays behind.
    const b = openCheckpoint(file);
    b.acquireLock({ pid: 222, host: 'h', startedAt: 2 }, (pid) => pid !== 111);
    expect(b.readEvents().map((e) => e.type)).toContain('lock.taken_over');
    b.close();
    const c = openCheckpoint(file);
    c.acquireLock({ pid: 333, host: 'h', startedAt: 3 }, () => true);
    c.close();
    a.close();
  });

  it('migrates a fresh file to the current user_version and reopens without re-running migrations', () => {
    const file = tempFile();
    openCheckpoint(file).close();
    const raw = new Database(file);
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
    const again = openCheckpoint(file);
    again.saveRun({ planName: 'x', planHash: 'h', machineVersion: 1, snapshot: {} });
    again.close();
  });

  it('refuses a file from a newer schema', () => {
    const file = tempFile();
    const raw = new Database(file);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 5}`);
    raw.close();
    expect(() => openCheckpoint(file)).toThrow(expect.objectContaining({ code: 'SHARDMOVE_STORE_VERSION' }) as Error);
  });

  it('lets a second connection read the summary while the writer holds an open transaction', () => {
    const file = tempFile();
    const w = openCheckpoint(file);
    w.startRound('projects', 'nfs-1', 1);
    w.recordPage('projects', 'nfs-1', 1, [item(1), item(2)], 0);
    const r = openCheckpoint(file, { readOnly: true, busyTimeoutMs: 50 });
    w.batch(() => {
      w.recordPage('projects', 'nfs-1', 1, [item(3)], 0);
      // Inside the writer's uncommitted transaction the reader sees the last committed state.
      expect(r.summary(0).total).toBe(2);
    });
    expect(r.summary(0).total).toBe(3);
    r.close();
    w.close();
  });

  it('summarises counts, quarantined reasons, stuck moves and the recent rate', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('projects', 'nfs-1', 1);
    s.recordPage('projects', 'nfs-1', 1, [item(1), item(2), item(3), item(4)], 0);
    s.markIntent('projects', 1, 1000);
    s.markInFlight('projects', 1, 10, 'scheduled', 1000);
    s.markMoved('projects', 1, 10, 'finished', 2000, null);
    s.markIntent('projects', 2, 1000);
    s.markQuarantined('projects', 2, 'checksum mismatch', null);
    s.markIntent('projects', 3, 1000);
    s.markInFlight('projects', 3, 11, 'started', 1000);
    s.markQuarantined('projects', 3, 'stuck', { at: 9000, readOnly: true });
    const sum = s.summary(2000 + 5 * 60_000);
    expect(sum.total).toBe(4);
    expect(sum.counts).toEqual(
      expect.arrayContaining([
        { kind: 'projects', source: 'nfs-1', state: 'moved', n: 1 },
        { kind: 'projects', source: 'nfs-1', state: 'quarantined', n: 2 },
        { kind: 'projects', source: 'nfs-1', state: 'pending', n: 1 },
      ]),
    );
    expect(sum.quarantined.map((q) => q.reason).sort()).toEqual(['checksum mismatch', 'stuck']);
    expect(sum.stuck).toEqual([
      { kind: 'projects', id: 3, moveId: 11, moveState: 'started', since: 1000, readOnly: true },
    ]);
    expect(sum.movedLast10Min).toBe(1);
    expect(s.summary(2000 + 11 * 60_000).movedLast10Min).toBe(0);
    s.close();
  });

  it('counts items that failed and wait for their retry, apart from the ones never tried', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('projects', 'nfs-1', 1);
    s.recordPage('projects', 'nfs-1', 1, [item(1), item(2), item(3)], 0);
    s.markIntent('projects', 1, 1000);
    s.markInFlight('projects', 1, 10, 'started', 1000);
    s.markPending('projects', 1, 5000, 'move failed', false);
    // A refunded attempt (the POST never reached the instance) is no failure.
    s.markIntent('projects', 2, 1000);
    s.markPending('projects', 2, 1000, null, true);
    expect(s.summary(0).retrying).toEqual([{ kind: 'projects', source: 'nfs-1', n: 1 }]);
    s.markIntent('projects', 1, 6000);
    expect(s.summary(0).retrying).toEqual([]);
    s.close();
  });

  it('shows the lock holder read-only, also to a read-only connection, until it is released', () => {
    const file = tempFile();
    const w = openCheckpoint(file);
    expect(w.readLock()).toBeNull();
    w.acquireLock({ pid: 4242, host: 'h', startedAt: 7 }, () => true);
    const r = openCheckpoint(file, { readOnly: true });
    expect(r.readLock()).toMatchObject({ pid: 4242, host: 'h', startedAt: 7 });
    w.releaseLock();
    expect(r.readLock()).toBeNull();
    r.close();
    w.close();
  });

  it('appends events in order and never rewrites them', () => {
    const s = openCheckpoint(':memory:');
    s.appendEvent('move.intent', { kind: 'projects', source: 'a', id: 1, attempt: 1, destination: 'b' }, 5);
    s.appendEvent('move.scheduled', { kind: 'projects', source: 'a', id: 1, moveId: 9, moveState: 'scheduled' }, 6);
    expect(s.readEvents().map((e) => [e.type, e.at, e.data])).toEqual([
      ['move.intent', 5, { kind: 'projects', source: 'a', id: 1, attempt: 1, destination: 'b' }],
      ['move.scheduled', 6, { kind: 'projects', source: 'a', id: 1, moveId: 9, moveState: 'scheduled' }],
    ]);
    s.close();
  });

  it('gives the newest events of some types, newest first, within the last events it is told to look at', () => {
    const s = openCheckpoint(':memory:');
    for (let i = 1; i <= 6; i++) {
      s.appendEvent('move.failed', { kind: 'projects', source: 'a', id: i, moveId: i, error: null }, i);
      s.appendEvent('step.started', { step: `s${i}` }, i);
    }
    expect(s.lastEventsOf(['move.failed'], 3).map((e) => e.data.id)).toEqual([6, 5, 4]);
    expect(s.lastEventsOf(['move.failed'], 10, 4).map((e) => e.data.id)).toEqual([6, 5]);
    expect(s.lastEventOf(['move.failed'])?.data.id).toBe(6);
    expect(s.lastEventsOf([], 3)).toEqual([]);
    s.close();
  });
});

describe('maintained counts', () => {
  it('match a full GROUP BY after inserts, state changes and source changes', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('projects', 'nfs-1', 1);
    s.recordPage('projects', 'nfs-1', 1, [1, 2, 3, 4, 5].map(item), 0);
    s.markIntent('projects', 1, 0);
    s.markInFlight('projects', 1, 7, 'scheduled', 0);
    s.markMoved('projects', 1, 7, 'finished', 1, null);
    s.markIntent('projects', 2, 0);
    s.markQuarantined('projects', 2, 'x', null);
    s.startRound('projects', 'nfs-2', 1);
    // Item 1 listed on another source: back to pending there.
    s.recordPage('projects', 'nfs-2', 1, [{ ...item(1), storage: 'nfs-2' }], 0);
    s.finishRound('projects', 'nfs-1', 1);
    const expected = [
      { kind: 'projects', source: 'nfs-1', state: 'pending', n: 3 },
      { kind: 'projects', source: 'nfs-1', state: 'quarantined', n: 1 },
      { kind: 'projects', source: 'nfs-2', state: 'pending', n: 1 },
    ];
    expect(s.summary(0).counts).toEqual(expected);
    expect(s.countStates('projects', 'nfs-1')).toMatchObject({ pending: 3, quarantined: 1, moved: 0 });
    s.close();
  });
});

describe('migration 1 -> 2', () => {
  it('fills the maintained counts from the items already in a version-1 file', () => {
    const file = tempFile();
    const raw = new Database(file);
    migrate(raw, file, 1);
    raw
      .prepare(
        `INSERT INTO items (kind, id, source, name, state) VALUES ('groups', 1, 'nfs-1', 'g', 'moved'), ('groups', 2, 'nfs-1', 'h', 'pending')`,
      )
      .run();
    raw.close();
    const s = openCheckpoint(file);
    expect(s.summary(0).counts).toEqual([
      { kind: 'groups', source: 'nfs-1', state: 'moved', n: 1 },
      { kind: 'groups', source: 'nfs-1', state: 'pending', n: 1 },
    ]);
    s.close();
  });
});

describe('the kind of run a checkpoint holds (schema 11)', () => {
  it('is claimed once: the first run fixes it and a later claim of the other kind gets the first', () => {
    const s = openCheckpoint(':memory:');
    expect(s.mode()).toBeNull();
    expect(s.claimMode('dry-run')).toBe('dry-run');
    expect(s.claimMode('run')).toBe('dry-run');
    expect(s.mode()).toBe('dry-run');
    s.close();
  });

  it.each([
    [true, 'dry-run'],
    [false, 'run'],
  ] as const)('an older checkpoint takes the kind of its first run (dryRun %s: %s)', (dryRun, mode) => {
    const file = tempFile();
    const raw = new Database(file);
    migrate(raw, file, 10);
    const started = raw.prepare(`INSERT INTO events (at, type, data) VALUES (?, 'run.started', ?)`);
    started.run(1, JSON.stringify({ resumed: false, dryRun, pid: 1 }));
    started.run(2, JSON.stringify({ resumed: true, dryRun: !dryRun, pid: 2 }));
    raw.close();
    const s = openCheckpoint(file);
    expect(s.mode()).toBe(mode);
    s.close();
  });

  it('an older checkpoint on which no run started is claimed by the next one', () => {
    const file = tempFile();
    const raw = new Database(file);
    migrate(raw, file, 10);
    raw.close();
    const s = openCheckpoint(file);
    expect(s.mode()).toBeNull();
    expect(s.claimMode('run')).toBe('run');
    s.close();
  });
});

describe('live control (shardmove control)', () => {
  it('has no overrides until written; a change keeps the fields it does not name and is logged', () => {
    const s = openCheckpoint(':memory:');
    expect(s.readControl()).toEqual({ concurrency: null, paused: false, pausedBy: null, stop: null, updatedAt: null });
    expect(s.writeControl({ concurrency: 3 }, 1000)).toEqual({
      concurrency: 3,
      paused: false,
      pausedBy: null,
      stop: null,
      updatedAt: 1000,
    });
    expect(s.writeControl({ paused: true }, 2000)).toEqual({
      concurrency: 3,
      paused: true,
      pausedBy: null,
      stop: null,
      updatedAt: 2000,
    });
    expect(s.writeControl({ concurrency: null, paused: false }, 3000)).toEqual({
      concurrency: null,
      paused: false,
      pausedBy: null,
      stop: null,
      updatedAt: 3000,
    });
    const changes = s
      .readEvents()
      .filter((e) => e.type === 'control.changed')
      .map((e) => e.data);
    expect(changes).toEqual([
      { concurrency: 3, paused: false, previous: { concurrency: null, paused: false } },
      { concurrency: 3, paused: true, previous: { concurrency: 3, paused: false } },
      { concurrency: null, paused: false, previous: { concurrency: 3, paused: true } },
    ]);
    expect(s.summary(4000).control).toEqual({
      concurrency: null,
      paused: false,
      pausedBy: null,
      stop: null,
      updatedAt: 3000,
    });
    s.close();
  });

  it('keeps why a pause holds when the breaker paused the run, and forgets it once unpaused or paused by hand', () => {
    const s = openCheckpoint(':memory:');
    expect(
      s.writeControl({ paused: true, pausedBy: 'paused by the failure breaker: 3 moves failed' }, 1),
    ).toMatchObject({ paused: true, pausedBy: 'paused by the failure breaker: 3 moves failed' });
    expect(s.writeControl({ concurrency: 2 }, 2)).toMatchObject({
      paused: true,
      pausedBy: 'paused by the failure breaker: 3 moves failed',
    });
    expect(s.writeControl({ paused: false }, 3)).toMatchObject({ paused: false, pausedBy: null });
    expect(s.writeControl({ paused: true }, 4)).toMatchObject({ paused: true, pausedBy: null });
    s.close();
  });

  it('keeps the first stop request until it is cleared, and logs its coming and going', () => {
    const s = openCheckpoint(':memory:');
    expect(s.writeControl({ stop: { by: 'control' } }, 10)).toMatchObject({ stop: { at: 10, by: 'control' } });
    // A second request (the stop file seen after it) keeps the first's time and origin.
    expect(s.writeControl({ stop: { by: 'file' } }, 20)).toMatchObject({ stop: { at: 10, by: 'control' } });
    expect(s.writeControl({ paused: true }, 30)).toMatchObject({ paused: true, stop: { at: 10, by: 'control' } });
    expect(s.writeControl({ stop: null }, 40)).toMatchObject({ paused: true, stop: null });
    const changes = s
      .readEvents()
      .filter((e) => e.type === 'control.changed')
      .map((e) => e.data);
    expect(changes).toEqual([
      {
        concurrency: null,
        paused: false,
        stop: { at: 10, by: 'control' },
        previous: { concurrency: null, paused: false, stop: null },
      },
      {
        concurrency: null,
        paused: false,
        stop: { at: 10, by: 'control' },
        previous: { concurrency: null, paused: false },
      },
      {
        concurrency: null,
        paused: true,
        stop: { at: 10, by: 'control' },
        previous: { concurrency: null, paused: false },
      },
      {
        concurrency: null,
        paused: true,
        previous: { concurrency: null, paused: true, stop: { at: 10, by: 'control' } },
      },
    ]);
    s.close();
  });

  it('is written by a second connection while the run holds the lock, and the run sees it', () => {
    const file = tempFile();
    const run = openCheckpoint(file);
    run.acquireLock({ pid: 111, host: 'h', startedAt: 1 }, () => true);
    const operator = openCheckpoint(file);
    operator.writeControl({ paused: true }, 5);
    operator.close();
    expect(run.readControl()).toMatchObject({ paused: true });
    // The operator's connection took no lock: the run still holds it.
    expect(run.readLock()).toMatchObject({ pid: 111 });
    run.close();
  });

  it('reads as no overrides on a read-only open of a checkpoint from before the control table', () => {
    const file = tempFile();
    const db = new Database(file);
    migrate(db, file, 4);
    db.close();
    const ro = openCheckpoint(file, { readOnly: true });
    const none = { concurrency: null, paused: false, pausedBy: null, stop: null, updatedAt: null };
    expect(ro.readControl()).toEqual(none);
    expect(ro.summary(0).control).toEqual(none);
    ro.close();
    // A writable open migrates it, and the table is there.
    const rw = openCheckpoint(file);
    expect(rw.writeControl({ concurrency: 2 }, 9).concurrency).toBe(2);
    rw.close();
  });
});

describe('releaseQuarantined (run --retry-quarantined)', () => {
  it('sends quarantined items back to pending with fresh attempts, but not those stuck on a running move', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('projects', 'nfs-1', 1);
    s.recordPage('projects', 'nfs-1', 1, [item(1), item(2), item(3)], 0);
    for (const id of [1, 2, 3]) s.markIntent('projects', id, 0);
    s.markQuarantined('projects', 1, 'checksum failed', null);
    s.markQuarantined('projects', 2, 'stuck: move 7 still started', { at: 5, readOnly: true });
    expect(s.releaseQuarantined(10)).toBe(1);
    expect(s.getItem('projects', 1)).toMatchObject({ state: 'pending', attempts: 0, nextAttemptAt: 0 });
    expect(s.getItem('projects', 2)).toMatchObject({ state: 'quarantined' });
    expect(s.getItem('projects', 3)).toMatchObject({ state: 'scheduling' });
    expect(
      s
        .readEvents()
        .filter((e) => e.type === 'quarantine.released')
        .map((e) => e.data),
    ).toEqual([{ count: 1 }]);
    // Nothing left to release: no event.
    expect(s.releaseQuarantined(11)).toBe(0);
    expect(s.readEvents().filter((e) => e.type === 'quarantine.released')).toHaveLength(1);
    s.close();
  });
});
