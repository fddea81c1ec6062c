// The engine against an in-memory database, without HTTP: transitions, fates, FIFO order and the
// worker limit, restart from the database, and bulk jobs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db, ItemKind, ItemRow, MoveRow } from '../db.js';
import { getMeta, openDatabase } from '../db.js';
import type { Faults, MoveFate } from '../faults.js';
import type { InstanceConfig } from '../seed-schema.js';
import { fakeChecksum } from '../checksum.js';
import { applySeed, parseSeed } from '../seed.js';
import type { MoveEngine } from './engine.js';
import { createMoveEngine } from './engine.js';
import { moveStatements } from './store.js';
import { systemClock } from '../../shared/clock.js';
import { assertProperty } from '../../../test/support/property.js';

const SEED = `
instance: { storages: [default, nfs-1, nfs-2, cluster], unreachable: [nfs-2], weights: { cluster: 100 } }
users: [{ id: 1, username: root, admin: true }]
inventory:
  projects:
    - { id: 1, storage: nfs-1, commit_count: 7 }
    - { id: 2, storage: nfs-1 }
    - { id: 3, storage: nfs-1 }
    - { id: 4, storage: nfs-1 }
    - { id: 5, storage: default }
  snippets: [{ id: 1, storage: nfs-1 }]
  groups: [{ id: 1, storage: nfs-1 }]
`;

/** Fates by `kind:id`: one for every attempt, or a list by attempt (then `ok`). */
function fakeFaults(fates: Record<string, MoveFate | MoveFate[]> = {}): Faults {
  return {
    onRequest: async () => false,
    moveFate: (kind, id, attempt = 1) => {
      const f = fates[`${kind}:${id}`];
      return (Array.isArray(f) ? f[attempt - 1] : f) ?? 'ok';
    },
    counts: () => ({}),
  };
}

const engines: MoveEngine[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
  for (const d of dbs.splice(0)) d.close();
});

function setup(
  opts: {
    fates?: Record<string, MoveFate | MoveFate[]>;
    workers?: number;
    ms?: number;
    file?: string;
    db?: Db;
    batch?: number;
    now?: () => number;
  } = {},
) {
  const db = opts.db ?? openDatabase(opts.file);
  if (!opts.db) {
    dbs.push(db);
    applySeed(db, parseSeed(SEED), Date.now());
  }
  const config = getMeta<InstanceConfig>(db, 'config') as InstanceConfig;
  const engine = createMoveEngine(
    {
      db,
      config,
      clock: { ...systemClock, now: opts.now ?? (() => Date.now()) },
      log: pino({ level: 'silent' }),
      faults: fakeFaults(opts.fates),
    },
    {
      workers: opts.workers ?? 10,
      speed: 1,
      moveDurationMs: opts.ms ?? 20,
      ...(opts.batch ? { bulkBatchSize: opts.batch } : {}),
    },
  );
  engines.push(engine);
  engine.start();
  const item = (kind: ItemKind, id: number) => moveStatements(db).itemById.get(kind, id) as ItemRow;
  const move = (id: number) => moveStatements(db).moveById.get(id) as MoveRow;
  return { db, engine, item, move };
}

/** A clock moved by hand: `step(ms, engine)` advances it, wakes the engine and lets it run. */
function manualClock(): { clock: () => number; step: (ms: number, e: MoveEngine) => Promise<void> } {
  let now = Date.parse('2026-06-01T00:00:00Z');
  return {
    clock: () => now,
    async step(ms, e) {
      now += ms;
      e.kick();
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    },
  };
}

async function until(check: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

function scheduled(outcome: ReturnType<MoveEngine['schedule']>): MoveRow {
  if (!outcome.ok) throw new Error(JSON.stringify(outcome.errors));
  return outcome.move;
}

describe('move engine', () => {
  it('runs scheduled -> started -> replicated -> finished and moves the item with its content', async () => {
    const { engine, item, move } = setup({ ms: 60 });
    const before = item('project', 1);
    const m = scheduled(engine.schedule(before, 'cluster'));
    expect(m.state).toBe('scheduled');
    expect(item('project', 1).read_only).toBe(1);
    const seen = new Set<string>();
    await until(() => {
      seen.add(move(m.id).state);
      return move(m.id).state === 'finished';
    });
    expect(seen.has('started')).toBe(true);
    const after = item('project', 1);
    expect(after).toMatchObject({ storage: 'cluster', read_only: 0, checksum: before.checksum, commit_count: 7 });
    expect(move(m.id).snapshot_checksum).toBe(before.checksum);
  });

  it('refuses a second move while the item is read-only, and unknown destinations', () => {
    const { engine, item } = setup({ ms: 1000 });
    scheduled(engine.schedule(item('project', 1), 'cluster'));
    expect(engine.schedule(item('project', 1), 'cluster')).toEqual({
      ok: false,
      errors: { project: ['is read-only'] },
    });
    expect(engine.schedule(item('project', 2), 'mars')).toEqual({
      ok: false,
      errors: { destination_storage_name: ['is not included in the list'] },
    });
  });

  it('picks the destination by weight when none is given', () => {
    const { engine, item } = setup({ ms: 1000 });
    expect(scheduled(engine.schedule(item('snippet', 1))).destination).toBe('cluster');
  });

  it('fails with an error message and leaves the item writable on its source', async () => {
    const { engine, item, move } = setup({ fates: { 'project:1': 'fail' } });
    const m = scheduled(engine.schedule(item('project', 1), 'cluster'));
    await until(() => move(m.id).state === 'failed');
    expect(move(m.id).error_message).toMatch(/checksum/);
    expect(item('project', 1)).toMatchObject({ storage: 'nfs-1', read_only: 0, commit_count: 7 });
  });

  it('ends in cleanup failed after replication, item on the destination and writable', async () => {
    const { engine, item, move } = setup({ fates: { 'group:1': 'cleanup_fail' } });
    const m = scheduled(engine.schedule(item('group', 1), 'cluster'));
    await until(() => move(m.id).state === 'cleanup failed');
    expect(move(m.id).error_message).toMatch(/remove/);
    expect(item('group', 1)).toMatchObject({ storage: 'cluster', read_only: 0 });
  });

  it('leaves the copy on the destination when the job dies after the copy; a move onto it reuses it, a failing one removes it', async () => {
    const { db, engine, item, move } = setup({
      fates: { 'project:1': ['failed_after_copy', 'ok'], 'project:2': ['failed_after_copy', 'fail'] },
    });
    const copies = (id: number) =>
      (
        db.prepare("SELECT storage, size_mb FROM stale_copies WHERE kind = 'project' AND item_id = ?").all(id) as {
          storage: string;
          size_mb: number;
        }[]
      ).map((c) => c.storage);
    const first = [1, 2].map((id) => scheduled(engine.schedule(item('project', id), 'cluster')));
    await until(() => first.every((m) => move(m.id).state === 'failed'));
    for (const m of first) expect(move(m.id).error_message).toBeNull();
    for (const id of [1, 2]) {
      expect(item('project', id)).toMatchObject({ storage: 'nfs-1', read_only: 0 });
      expect(copies(id)).toEqual(['cluster']);
    }
    // The retry fetches into the copy: it is the repository now. A copy that fails removes it.
    const again = [1, 2].map((id) => scheduled(engine.schedule(item('project', id), 'cluster')));
    await until(() => move(again[0]!.id).state === 'finished' && move(again[1]!.id).state === 'failed');
    expect(item('project', 1).storage).toBe('cluster');
    expect(copies(1)).toEqual([]);
    expect(item('project', 2).storage).toBe('nfs-1');
    expect(copies(2)).toEqual([]);
  });

  it("copies a project's wiki after its repository: out of room in the wiki, the repository's copy stays on the destination", async () => {
    const db = openDatabase();
    dbs.push(db);
    const seed = `
instance: { storages: [nfs-1, cluster], storage_capacity: { cluster: 157286400 } }
users: [{ id: 1, username: root, admin: true }]
inventory:
  projects:
    - { id: 1, storage: nfs-1, size_mb: 100, wiki_mb: 100 }
    - { id: 2, storage: nfs-1, size_mb: 200 }
  snippets: []
  groups: []
`;
    applySeed(db, parseSeed(seed), Date.now());
    const { engine, item, move } = setup({ db, workers: 1 });
    const copies = (id: number) =>
      db.prepare("SELECT storage, size_mb FROM stale_copies WHERE kind = 'project' AND item_id = ?").all(id);
    // 150 MiB free: project 1's repository (100) fits, with its wiki (200) it does not.
    const one = scheduled(engine.schedule(item('project', 1), 'cluster'));
    await until(() => move(one.id).state === 'failed');
    expect(move(one.id).error_message).toMatch(/tar/);
    expect(item('project', 1)).toMatchObject({ storage: 'nfs-1', read_only: 0 });
    expect(copies(1)).toEqual([{ storage: 'cluster', size_mb: 100 }]);
    // A repository that does not fit itself leaves nothing (ReplicateService removes its target).
    const two = scheduled(engine.schedule(item('project', 2), 'cluster'));
    await until(() => move(two.id).state === 'failed');
    expect(copies(2)).toEqual([]);
  });

  it('leaves a stuck move in started with the item read-only, without holding a worker', async () => {
    const { engine, item, move } = setup({ fates: { 'project:1': 'stuck' }, workers: 1 });
    const stuck = scheduled(engine.schedule(item('project', 1), 'cluster'));
    const next = scheduled(engine.schedule(item('project', 2), 'cluster'));
    await until(() => move(next.id).state === 'finished');
    // One more move through the only worker: the engine has had its turns, and the stuck one stays.
    const third = scheduled(engine.schedule(item('project', 3), 'cluster'));
    await until(() => move(third.id).state === 'finished');
    expect(move(stuck.id).state).toBe('started');
    expect(item('project', 1).read_only).toBe(1);
  });

  it('fails moves from or to an unreachable storage with a Gitaly error', async () => {
    const { engine, item, move } = setup();
    const m = scheduled(engine.schedule(item('project', 1), 'nfs-2'));
    await until(() => move(m.id).state === 'failed');
    expect(move(m.id).error_message).toMatch(/UNAVAILABLE.*nfs-2/);
    expect(move(m.id).error_message!.length).toBeLessThanOrEqual(256);
    expect(item('project', 1).read_only).toBe(0);
  });

  it('finishes a move to the same storage without copying', async () => {
    const { engine, item, move } = setup({ ms: 5000 });
    const m = scheduled(engine.schedule(item('project', 5), 'default'));
    await until(() => move(m.id).state === 'finished', 500);
    expect(item('project', 5)).toMatchObject({ storage: 'default', read_only: 0 });
  });

  it('runs FIFO with at most `workers` moves at once', async () => {
    const { engine, item, move } = setup({ workers: 2, ms: 40 });
    const ids = [1, 2, 3, 4].map((id) => scheduled(engine.schedule(item('project', id), 'cluster')).id);
    let maxActive = 0;
    await until(() => {
      const active = ids.filter((id) => ['started', 'replicated'].includes(move(id).state)).length;
      maxActive = Math.max(maxActive, active);
      return ids.every((id) => move(id).state === 'finished');
    });
    expect(maxActive).toBeLessThanOrEqual(2);
    const startOrder = [...ids].sort(
      (a, b) => Date.parse(move(a).updated_at) - Date.parse(move(b).updated_at) || a - b,
    );
    expect(startOrder).toEqual(ids);
  });

  it('resumes moves from the database after a restart, keeping absolute due times', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-'));
    try {
      const file = join(dir, 'state.db');
      const first = setup({ file, ms: 300, workers: 1 });
      const a = scheduled(first.engine.schedule(first.item('project', 1), 'cluster'));
      const b = scheduled(first.engine.schedule(first.item('project', 2), 'cluster'));
      await until(() => first.move(a.id).state === 'started');
      first.engine.close();
      const due = first.move(a.id).due_at_ms;
      first.db.close();
      dbs.splice(dbs.indexOf(first.db), 1);
      const db = openDatabase(file);
      dbs.push(db);
      const second = setup({ db, ms: 300, workers: 1 });
      expect(second.move(a.id).due_at_ms).toBe(due);
      await until(() => second.move(b.id).state === 'finished');
      expect(second.move(a.id).state).toBe('finished');
      expect(second.item('project', 1)).toMatchObject({ storage: 'cluster', read_only: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bulk-schedules items on the source in batches, skipping read-only ones', async () => {
    const { db, engine, item, move } = setup({ ms: 1 });
    const before = (db.prepare('SELECT count(*) n FROM moves').get() as { n: number }).n;
    db.prepare("UPDATE items SET read_only = 1 WHERE kind = 'project' AND id = 2").run();
    engine.scheduleBulk('project', 'nfs-1', 'cluster');
    await until(() => engine.stats().bulkJobs === 0 && engine.stats().queued === 0 && engine.stats().running === 0);
    const created = db.prepare('SELECT item_id FROM moves WHERE id > ? ORDER BY item_id').all(before) as {
      item_id: number;
    }[];
    expect(created.map((r) => r.item_id)).toEqual([1, 3, 4]);
    await until(() => item('project', 4).storage === 'cluster');
    expect(move(before + 1).state).toBe('finished');
  });

  it('resumes a bulk job left unprocessed by a stopped engine, batch by batch', async () => {
    const first = setup({ ms: 1, batch: 2 });
    first.engine.scheduleBulk('project', 'nfs-1', 'cluster');
    // Closed before the background batch ran: the job exists only in the database.
    first.engine.close();
    expect(first.engine.stats()).toMatchObject({ queued: 0, bulkJobs: 1 });
    const second = setup({ db: first.db, ms: 1, batch: 2 });
    await until(() => [1, 2, 3, 4].every((id) => second.item('project', id).storage === 'cluster'));
    expect(second.engine.stats().bulkJobs).toBe(0);
    const moves = first.db.prepare('SELECT count(*) n FROM moves').get() as { n: number };
    expect(moves.n).toBe(4);
  });

  it('starts the next move when a worker freed up, not when the timer fired, so lateness does not add up', async () => {
    const t0 = Date.parse('2026-01-01T00:00:00.000Z');
    let now = t0;
    const { engine, item, move } = setup({ workers: 2, ms: 10, now: () => now });
    const items: [ItemKind, number][] = [
      ['project', 1],
      ['project', 2],
      ['project', 3],
      ['project', 4],
      ['project', 5],
      ['snippet', 1],
      ['group', 1],
    ];
    const ids = items.map(([kind, id]) => scheduled(engine.schedule(item(kind, id), 'cluster')).id);
    const tick = async (ms: number) => {
      now += ms;
      engine.kick();
      await new Promise<void>((resolve) => setImmediate(resolve));
    };
    await tick(0);
    expect(ids.map((id) => move(id).state)).toEqual([
      'started',
      'started',
      'scheduled',
      'scheduled',
      'scheduled',
      'scheduled',
      'scheduled',
    ]);
    // The timer fires 20 ms late: moves 3 and 4 started when 1 and 2 ended (10 ms), so they are done too.
    await tick(20);
    // Then 200 ms late: a start is never more than MAX_LAG_MS (50) in the past, so move 7 starts at 170.
    await tick(200);
    expect(ids.map((id) => move(id).state)).toEqual(Array(7).fill('finished'));
    expect(ids.map((id) => Date.parse(move(id).updated_at) - t0)).toEqual([10, 10, 20, 20, 30, 30, 180]);
  });

  it('an idle worker takes a move when it was scheduled, not when the tick that saw it ran', async () => {
    const t0 = Date.parse('2026-01-01T00:00:00.000Z');
    let now = t0;
    const { engine, item, move } = setup({ workers: 1, ms: 10, now: () => now });
    const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
    const first = scheduled(engine.schedule(item('project', 1), 'cluster'));
    await turn();
    now += 10;
    engine.kick();
    await turn();
    expect(move(first.id).state).toBe('finished');
    // The worker is idle from 10. A move scheduled at 30 waits for no tick: Sidekiq's free
    // thread fetches the job as it is pushed, so it starts at 30 even if the tick runs at 35.
    now = t0 + 30;
    const second = scheduled(engine.schedule(item('project', 2), 'cluster'));
    now = t0 + 35;
    await turn();
    expect(move(second.id).state).toBe('started');
    expect(Date.parse(move(second.id).updated_at) - t0).toBe(30);
    expect(move(second.id).due_at_ms).toBe(t0 + 30 + 9);
    // Still bounded: a move scheduled long before a stalled tick starts MAX_LAG_MS (50) before it.
    now = t0 + 100;
    const third = scheduled(engine.schedule(item('project', 3), 'cluster'));
    now = t0 + 400;
    await turn();
    expect(move(third.id).state).toBe('finished');
    expect(Date.parse(move(third.id).updated_at) - t0).toBe(360);
  });

  it("fails a move whose worker finds the lease held, with no message, and leaves the item read-only (GitLab's do_fail!)", async () => {
    const { clock, step } = manualClock();
    const { engine, item, move } = setup({ ms: 1000, now: clock });
    const first = scheduled(engine.schedule(item('project', 1), 'cluster'));
    await step(0, engine);
    await step(950, engine);
    expect(move(first.id).state).toBe('replicated');
    // GitLab makes the item writable at replicated, so a new move passes validation...
    expect(item('project', 1)).toMatchObject({ storage: 'cluster', read_only: 0 });
    const second = scheduled(engine.schedule(item('project', 1), 'default'));
    expect(second.source).toBe('cluster');
    await step(0, engine);
    // ...but its worker finds the first one's lease held: scheduled -> failed, error_message null,
    // and the read-only flag it set at scheduling stays (scheduled -> failed has no callback).
    expect(move(second.id)).toMatchObject({ state: 'failed', error_message: null, snapshot_checksum: null });
    expect(item('project', 1).read_only).toBe(1);
    // Other items are not held up.
    const other = scheduled(engine.schedule(item('project', 2), 'cluster'));
    await step(0, engine);
    expect(move(other.id).state).toBe('started');
    // The first move's cleanup ends (finish_cleanup has no callback): the item stays read-only,
    // on the first move's destination with its content, and new moves are refused.
    await step(100, engine);
    expect(move(first.id).state).toBe('finished');
    expect(item('project', 1)).toMatchObject({ storage: 'cluster', read_only: 1, commit_count: 7 });
    expect(engine.schedule(item('project', 1), 'default')).toEqual({
      ok: false,
      errors: { project: ['is read-only'] },
    });
    expect(engine.stats()).toMatchObject({ queued: 0 });
  });

  it('runs a move that reaches a worker only after the earlier one ended (the lease is free again), also across a restart', async () => {
    const { clock, step } = manualClock();
    // One worker, busy with project 2 while project 1's second move is queued behind it.
    const { db, engine, item, move } = setup({ ms: 1000, now: clock, workers: 1 });
    const first = scheduled(engine.schedule(item('project', 1), 'cluster'));
    await step(0, engine);
    await step(950, engine);
    expect(move(first.id).state).toBe('replicated');
    const second = scheduled(engine.schedule(item('project', 1), 'default'));
    engine.close();
    const again = setup({ db, ms: 1000, now: clock, workers: 1 }).engine;
    await step(0, again);
    expect(move(second.id).state).toBe('scheduled');
    await step(100, again);
    expect(move(first.id).state).toBe('finished');
    expect(move(second.id).state).toBe('started');
    await step(1000, again);
    expect(move(second.id).state).toBe('finished');
    expect(item('project', 1)).toMatchObject({ storage: 'default', read_only: 0, commit_count: 7 });
  });

  it('keeps its invariants under any mix of schedules, fates, writes and time (property)', async () => {
    const ITEMS: [ItemKind, number][] = [
      ['project', 1],
      ['project', 2],
      ['project', 5],
      ['snippet', 1],
      ['group', 1],
    ];
    const STORAGES = ['default', 'nfs-1', 'nfs-2', 'cluster'];
    const FATES: MoveFate[] = ['ok', 'ok', 'ok', 'fail', 'cleanup_fail', 'stuck', 'failed_after_copy'];
    const command = fc.oneof(
      fc.record({
        op: fc.constant('schedule' as const),
        item: fc.nat(ITEMS.length - 1),
        dest: fc.nat(STORAGES.length),
        fate: fc.constantFrom(...FATES),
      }),
      fc.record({ op: fc.constant('write' as const), item: fc.nat(ITEMS.length - 1) }),
      fc.record({ op: fc.constant('time' as const), ms: fc.integer({ min: 0, max: 40 }) }),
    );
    await assertProperty(
      fc.asyncProperty(fc.array(command, { maxLength: 30 }), async (commands) => {
        let now = Date.parse('2026-01-01T00:00:00.000Z');
        const fates: Record<string, MoveFate> = {};
        const db = openDatabase();
        applySeed(db, parseSeed(SEED), now);
        const config = getMeta<InstanceConfig>(db, 'config') as InstanceConfig;
        const engine = createMoveEngine(
          {
            db,
            config,
            clock: { ...systemClock, now: () => now },
            log: pino({ level: 'silent' }),
            faults: fakeFaults(fates),
          },
          { workers: 2, speed: 1, moveDurationMs: 20 },
        );
        engine.start();
        const st = moveStatements(db);
        const commits = new Map<string, number>(
          ITEMS.map(([k, id]) => [`${k}:${id}`, st.itemById.get(k, id)!.commit_count]),
        );
        const terminal = new Map<number, string>();
        try {
          for (const c of commands) {
            if (c.op === 'schedule') {
              const [kind, id] = ITEMS[c.item]!;
              fates[`${kind}:${id}`] = c.fate;
              const before = st.itemById.get(kind, id)!;
              const out = engine.schedule(before, STORAGES[c.dest]);
              expect(out.ok).toBe(before.read_only === 0);
            } else if (c.op === 'write') {
              const [kind, id] = ITEMS[c.item]!;
              const row = st.itemById.get(kind, id)!;
              if (row.read_only === 0) {
                db.prepare('UPDATE items SET commit_count = ?, checksum = ? WHERE kind = ? AND id = ?').run(
                  row.commit_count + 1,
                  fakeChecksum(kind, id, row.commit_count + 1),
                  kind,
                  id,
                );
                commits.set(`${kind}:${id}`, row.commit_count + 1);
              }
            } else {
              now += c.ms;
              engine.kick();
            }
            await new Promise<void>((resolve) => setImmediate(resolve));
            expect(engine.stats().running).toBeLessThanOrEqual(2);
            const moves = db.prepare('SELECT * FROM moves ORDER BY id').all() as MoveRow[];
            for (const m of moves) {
              const seen = terminal.get(m.id);
              if (seen !== undefined) expect(m.state).toBe(seen);
              else if (['finished', 'failed', 'cleanup failed'].includes(m.state)) terminal.set(m.id, m.state);
            }
            for (const [kind, id] of ITEMS) {
              const row = st.itemById.get(kind, id)!;
              const mine = moves.filter((m) => m.kind === kind && m.item_id === id);
              const blocking = mine.filter((m) => m.state === 'scheduled' || m.state === 'started');
              expect(blocking.length).toBeLessThanOrEqual(1);
              // A lease conflict (failed, never started, no message) leaves the flag set for good.
              const stranded = mine.some(
                (m) => m.state === 'failed' && m.error_message === null && m.snapshot_checksum === null,
              );
              expect(row.read_only).toBe(blocking.length > 0 || stranded ? 1 : 0);
              expect(row.commit_count).toBe(commits.get(`${kind}:${id}`));
              expect(row.checksum).toBe(fakeChecksum(kind, id, row.commit_count));
              const landed = mine.filter((m) => ['replicated', 'finished', 'cleanup failed'].includes(m.state)).at(-1);
              if (landed) expect(row.storage).toBe(landed.destination);
              // A copy left behind is never on the storage the item is served from: a move onto it reused it.
              const left = db
                .prepare('SELECT storage FROM stale_copies WHERE kind = ? AND item_id = ?')
                .all(kind, id) as { storage: string }[];
              expect(left.map((c) => c.storage)).not.toContain(row.storage);
            }
          }
        } finally {
          engine.close();
          db.close();
        }
      }),
      { numRuns: 60 },
    );
  });
});
