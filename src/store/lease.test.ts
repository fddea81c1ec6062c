import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openCheckpoint } from './checkpoint.js';
import type { Checkpoint } from './checkpoint.js';
import { migrate } from './schema.js';
import { dumpCheckpoint } from '../../test/support/checkpoint-dump.js';

const dirs: string[] = [];
const open: Checkpoint[] = [];
function tempFile(): string {
  const d = mkdtempSync(join(tmpdir(), 'sm-lease-'));
  dirs.push(d);
  return join(d, 'run.db');
}
function connect(file: string): Checkpoint {
  const c = openCheckpoint(file, { busyTimeoutMs: 200 });
  open.push(c);
  return c;
}
afterEach(() => {
  for (const c of open.splice(0)) c.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const LEASE = 60_000;
const T0 = 1_700_000_000_000;
const alive = () => true;

describe('the run lock as a lease', () => {
  it('takes over a holder from another host whose heartbeat is older than its lease, naming it', () => {
    const file = tempFile();
    const a = connect(file);
    a.acquireLock({ pid: 111, host: 'pod-a', startedAt: T0 }, alive, { ms: LEASE, now: T0 });
    expect(a.renewLock(T0 + 10_000)).toBe(true);
    const b = connect(file);
    const got = b.acquireLock({ pid: 222, host: 'pod-b', startedAt: T0 + 80_000 }, alive, {
      ms: LEASE,
      now: T0 + 80_000,
    });
    expect(got.reason).toBe('stale');
    expect(got.previous).toMatchObject({ pid: 111, host: 'pod-a', heartbeatAt: T0 + 10_000, leaseMs: LEASE });
    const takeover = b.readEvents().find((e) => e.type === 'lock.taken_over');
    expect(takeover?.data).toMatchObject({
      previous: { pid: 111, host: 'pod-a' },
      reason: 'stale',
      heartbeatAgeMs: 70_000,
    });
    expect(b.readLock()).toMatchObject({ pid: 222, host: 'pod-b', generation: got.generation });
  });

  it('refuses a holder from another host whose heartbeat is fresh, saying when it may be taken over', () => {
    const file = tempFile();
    const a = connect(file);
    a.acquireLock({ pid: 111, host: 'pod-a', startedAt: T0 }, alive, { ms: LEASE, now: T0 });
    a.renewLock(T0 + 50_000);
    const b = connect(file);
    let err: unknown;
    try {
      b.acquireLock({ pid: 222, host: 'pod-b', startedAt: T0 + 80_000 }, () => false, { ms: LEASE, now: T0 + 80_000 });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'SHARDMOVE_LOCKED', holder: { pid: 111, host: 'pod-a' } });
    expect((err as Error).message).toMatch(/last heartbeat 30s ago.*lease of 60s.*shardmove unlock/);
    expect(a.readLock()).toMatchObject({ pid: 111 });
  });

  it('never expires a lock written without a lease (an older shardmove), on another host', () => {
    const file = tempFile();
    const a = connect(file);
    a.acquireLock({ pid: 111, host: 'pod-a', startedAt: T0 }, alive);
    const b = connect(file);
    expect(() =>
      b.acquireLock({ pid: 222, host: 'pod-b', startedAt: T0 + 1e9 }, alive, { ms: LEASE, now: T0 + 1e9 }),
    ).toThrow(/only `shardmove unlock` removes it/);
  });

  it('fences a paused holder after a takeover: every write fails, nothing reaches the file', () => {
    const file = tempFile();
    const a = connect(file);
    const first = a.acquireLock({ pid: 111, host: 'pod-a', startedAt: T0 }, alive, { ms: LEASE, now: T0 });
    a.saveRun({ planName: 'p', planHash: 'h', machineVersion: 1, snapshot: { at: 'a' } });
    a.recordPage(
      'projects',
      'nfs-1',
      1,
      [{ kind: 'projects', id: 1, storage: 'nfs-1', name: 'g/p1', sizeBytes: null }],
      T0,
    );
    // a is paused (SIGSTOP, a frozen container) for longer than its lease; b takes over.
    const b = connect(file);
    const second = b.acquireLock({ pid: 222, host: 'pod-b', startedAt: T0 + 120_000 }, alive, {
      ms: LEASE,
      now: T0 + 120_000,
    });
    expect(second.generation).toBeGreaterThan(first.generation);
    const before = dumpCheckpoint(file);
    // a resumes: whatever it tries to write is refused.
    const lost = /SHARDMOVE_LEASE_LOST/;
    expect(() => a.saveRun({ planName: 'p', planHash: 'h', machineVersion: 1, snapshot: { at: 'a again' } })).toThrow(
      lost,
    );
    expect(() => a.markIntent('projects', 1, T0 + 121_000)).toThrow(lost);
    expect(() =>
      a.appendEvent(
        'move.intent',
        { kind: 'projects', source: 'nfs-1', id: 1, attempt: 1, destination: 'b' },
        T0 + 121_000,
      ),
    ).toThrow(lost);
    expect(() => a.batch(() => a.markPending('projects', 1, 0, 'x', false))).toThrow(lost);
    expect(() =>
      a.recordPage(
        'projects',
        'nfs-1',
        1,
        [{ kind: 'projects', id: 2, storage: 'nfs-1', name: 'g/p2', sizeBytes: null }],
        T0,
      ),
    ).toThrow(lost);
    expect(a.renewLock(T0 + 121_000)).toBe(false);
    expect(() => a.assertLease()).toThrow(
      expect.objectContaining({ code: 'SHARDMOVE_LEASE_LOST', holder: expect.objectContaining({ pid: 222 }) }),
    );
    // Its release leaves the new holder's lock alone.
    a.releaseLock();
    expect(dumpCheckpoint(file)).toBe(before);
    expect(b.readLock()).toMatchObject({ pid: 222 });
    // The new holder writes as usual.
    b.saveRun({ planName: 'p', planHash: 'h', machineVersion: 1, snapshot: { at: 'b' } });
    expect(b.loadRun()?.snapshot).toEqual({ at: 'b' });
  });

  it('unlock removes any holder, logs it, and fences that holder too', () => {
    const file = tempFile();
    const a = connect(file);
    a.acquireLock({ pid: 111, host: 'pod-a', startedAt: T0 }, alive, { ms: LEASE, now: T0 });
    const op = connect(file);
    expect(op.forceUnlock({ pid: 999, host: 'laptop' }, T0 + 1000)).toMatchObject({ pid: 111, host: 'pod-a' });
    expect(op.readLock()).toBeNull();
    expect(op.readEvents().find((e) => e.type === 'lock.unlocked')?.data).toMatchObject({
      previous: { pid: 111 },
      by: { pid: 999, host: 'laptop' },
    });
    expect(op.forceUnlock({ pid: 999, host: 'laptop' }, T0 + 2000)).toBeNull();
    expect(() => a.appendEvent('run.restart', { reason: 'x' }, T0)).toThrow(/SHARDMOVE_LEASE_LOST/);
    expect(() => a.assertLease()).toThrow(/removed \(shardmove unlock\)/);
  });

  it('keeps raising the generation across releases, and a released store writes unfenced again', () => {
    const file = tempFile();
    const a = connect(file);
    const g1 = a.acquireLock({ pid: 1, host: 'h', startedAt: T0 }, alive, { ms: LEASE, now: T0 }).generation;
    a.releaseLock();
    const g2 = a.acquireLock({ pid: 1, host: 'h', startedAt: T0 }, alive, { ms: LEASE, now: T0 }).generation;
    expect(g2).toBe(g1 + 1);
    a.releaseLock();
    a.appendEvent('run.restart', { reason: 'after release' }, T0);
    const b = connect(file);
    expect(b.acquireLock({ pid: 2, host: 'h', startedAt: T0 }, alive, { ms: LEASE, now: T0 }).generation).toBe(g2 + 1);
  });

  it('migrates a lock row from before leases: kept, without a lease, generation 0', () => {
    const file = tempFile();
    const raw = new Database(file);
    migrate(raw, file, 7);
    raw.prepare('INSERT INTO lock (id, pid, host, started_at) VALUES (1, 5, ?, ?)').run('old-host', T0);
    raw.close();
    const s = connect(file);
    expect(s.readLock()).toEqual({
      pid: 5,
      host: 'old-host',
      startedAt: T0,
      heartbeatAt: T0,
      leaseMs: null,
      generation: 0,
    });
  });
});
