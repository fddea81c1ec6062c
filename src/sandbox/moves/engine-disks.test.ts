// The move engine with disks that have a bandwidth (./disks.ts), on a clock moved by hand: copies
// on one source share its disk, the fixed part of a move comes on top, and another tenant's window
// slows the copies inside it only. Times are the sandbox's simulated ones, exact to the ms.
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db, ItemRow, MoveRow } from '../db.js';
import { getMeta, openDatabase } from '../db.js';
import type { Faults } from '../faults.js';
import type { InstanceConfig } from '../seed-schema.js';
import { applySeed, parseSeed } from '../seed.js';
import type { MoveEngine } from './engine.js';
import { createMoveEngine } from './engine.js';
import { FIXED_CLEANUP_MS, FIXED_COPY_MS } from './policy.js';
import { moveStatements } from './store.js';
import { systemClock } from '../../shared/clock.js';

const MIB = 1024 * 1024;
/** nfs-1's disk: 10 MiB/s, so a 10 MiB project alone takes one second to copy. */
const BANDWIDTH = 10 * MIB;

/** Sixteen 10 MiB projects on nfs-1 (or `projects`); `instance` lines are added to the instance. */
function seedText(instance: string[], projects = Array.from({ length: 16 }, () => 'nfs-1:10')): string {
  return [
    'instance:',
    '  storages: [default, nfs-1, cluster]',
    `  storage_capacity: { cluster: ${100 * 1024 * MIB} }`,
    ...instance.map((l) => `  ${l}`),
    'users: [{ id: 1, username: root, admin: true }]',
    'inventory:',
    '  projects:',
    ...projects.map((p, i) => {
      const [storage, mb] = p.split(':');
      return `    - { id: ${i + 1}, storage: ${storage}, size_mb: ${mb} }`;
    }),
    '',
  ].join('\n');
}

const BANDWIDTH_SEED = seedText(['storage_bandwidth: { nfs-1: 10MiB/s }']);

const noFaults: Faults = { onRequest: async () => false, moveFate: () => 'ok', counts: () => ({}) };

const engines: MoveEngine[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
  for (const d of dbs.splice(0)) d.close();
});

const T0 = Date.parse('2026-06-01T00:00:00Z');

/**
 * An engine on a manual clock; `at(ms)` moves the clock to `ms` after T0 and lets it run. With
 * `restart`, a new engine on the database of an earlier one, started at `restart.ms` (a restart).
 */
function setup(seed: string, opts: { speed?: number; workers?: number; restart?: { db: Db; ms: number } } = {}) {
  const { speed = 1, workers = 20, restart } = opts;
  const db = restart?.db ?? openDatabase();
  const t0 = T0;
  let now = t0 + (restart?.ms ?? 0);
  if (!restart) {
    dbs.push(db);
    applySeed(db, parseSeed(seed), now);
  }
  const config = getMeta<InstanceConfig>(db, 'config') as InstanceConfig;
  const engine = createMoveEngine(
    { db, config, clock: { ...systemClock, now: () => now }, log: pino({ level: 'silent' }), faults: noFaults },
    { workers, speed },
  );
  engines.push(engine);
  engine.start();
  const s = moveStatements(db);
  const at = async (ms: number) => {
    now = t0 + ms;
    engine.kick();
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  const moveAll = async (n: number) => {
    const ids: number[] = [];
    for (let i = 1; i <= n; i++) {
      const out = engine.schedule(s.itemById.get('project', i) as ItemRow, 'cluster');
      if (!out.ok) throw new Error(JSON.stringify(out.errors));
      ids.push(out.move.id);
    }
    await at(0);
    return ids;
  };
  const states = (ids: number[]) => [...new Set(ids.map((id) => (s.moveById.get(id) as MoveRow).state))];
  const gauge = (storage: string) => engine.load().storages.find((g) => g.storage === storage);
  const schedule = (ids: number[]) =>
    ids.map((i) => {
      const out = engine.schedule(s.itemById.get('project', i) as ItemRow, 'cluster');
      if (!out.ok) throw new Error(JSON.stringify(out.errors));
      return out.move.id;
    });
  return { db, engine, at, moveAll, schedule, states, gauge };
}

describe('moves on disks with a bandwidth', () => {
  it('share the source disk: N copies take N times as long, the bytes per second stay flat, the fixed part comes on top', async () => {
    const rows: { n: number; copyMs: number; moveMs: number; copyMiBps: number; moveMiBps: number }[] = [];
    for (const n of [1, 2, 4, 8, 16]) {
      const { at, moveAll, states } = setup(BANDWIDTH_SEED);
      const ids = await moveAll(n);
      // Every copy gets 10/n MiB/s: its 10 MiB take n seconds, then the fixed part of the copy.
      const transferMs = (n * 10 * MIB * 1000) / BANDWIDTH;
      const copyMs = transferMs + FIXED_COPY_MS;
      await at(copyMs - 1);
      expect(states(ids)).toEqual(['started']);
      await at(copyMs);
      expect(states(ids)).toEqual(['replicated']);
      await at(copyMs + FIXED_CLEANUP_MS - 1);
      expect(states(ids)).toEqual(['replicated']);
      await at(copyMs + FIXED_CLEANUP_MS);
      expect(states(ids)).toEqual(['finished']);
      const moveMs = copyMs + FIXED_CLEANUP_MS;
      rows.push({
        n,
        copyMs: transferMs,
        moveMs,
        copyMiBps: (n * 10) / (transferMs / 1000),
        moveMiBps: (n * 10) / (moveMs / 1000),
      });
    }
    // The disk's bytes per second while copying do not grow with more copies at once; a whole
    // batch's grow only because the fixed part is spread over more moves.
    expect(new Set(rows.map((r) => r.copyMiBps))).toEqual(new Set([10]));
    for (let i = 1; i < rows.length; i++) {
      expect((rows[i] as (typeof rows)[number]).moveMs).toBeGreaterThan((rows[i - 1] as (typeof rows)[number]).moveMs);
      expect((rows[i] as (typeof rows)[number]).moveMiBps).toBeGreaterThan(
        (rows[i - 1] as (typeof rows)[number]).moveMiBps,
      );
      expect((rows[i] as (typeof rows)[number]).moveMiBps).toBeLessThan(10);
    }
    console.log(
      'moves at once, transfer ms, move ms, MiB/s copying, MiB/s over the batch\n' +
        rows.map((r) => `${r.n}\t${r.copyMs}\t${r.moveMs}\t${r.copyMiBps}\t${r.moveMiBps.toFixed(2)}`).join('\n'),
    );
  });

  it("slow down inside another tenant's window and speed up after it", async () => {
    // Two 10 MiB copies at 5 MiB/s each; the tenant takes half of nfs-1 from 1 s to 2 s.
    const { at, moveAll, states, gauge } = setup(
      seedText([
        'storage_bandwidth: { nfs-1: 10MiB }',
        'disk_busy: [{ storage: nfs-1, share: 0.5, from: 1s, to: 2s }]',
      ]),
    );
    const ids = await moveAll(2);
    const settled = gauge('cluster')?.usedBytes as number;
    const copiedMiB = () => ((gauge('cluster')?.usedBytes as number) - settled) / MIB;
    await at(1000);
    expect(copiedMiB()).toBeCloseTo(10, 6);
    // Inside the window each copy gets 2.5 MiB/s.
    await at(1500);
    expect(copiedMiB()).toBeCloseTo(12.5, 6);
    await at(2000);
    expect(copiedMiB()).toBeCloseTo(15, 6);
    // After it, 5 MiB/s each again: the last 5 MiB take half a second.
    await at(2250);
    expect(copiedMiB()).toBeCloseTo(17.5, 6);
    // The transfers end at 2.5 s instead of 2 s; the fixed part follows.
    await at(2500 + FIXED_COPY_MS - 1);
    expect(states(ids)).toEqual(['started']);
    await at(2500 + FIXED_COPY_MS);
    expect(states(ids)).toEqual(['replicated']);
    await at(2500 + FIXED_COPY_MS + FIXED_CLEANUP_MS - 1);
    expect(states(ids)).toEqual(['replicated']);
    await at(2500 + FIXED_COPY_MS + FIXED_CLEANUP_MS);
    expect(states(ids)).toEqual(['finished']);
    // nfs-1 was busy all the time the copies ran (the tenant's share included), then idle.
    await at(10_000);
    expect(states(ids)).toEqual(['finished']);
    const nfs1 = gauge('nfs-1');
    expect(nfs1?.ioSeconds).toBeCloseTo(2.5, 9);
    expect((nfs1?.readBytes as number) / MIB).toBeCloseTo(20, 6);
    expect((gauge('cluster')?.writtenBytes as number) / MIB).toBeCloseTo(20, 6);
  });

  it('follows the time compression: at speed 10 the transfer and the fixed part are ten times shorter', async () => {
    const { at, moveAll, states } = setup(BANDWIDTH_SEED, { speed: 10 });
    const ids = await moveAll(2);
    await at(200 + FIXED_COPY_MS / 10 - 1);
    expect(states(ids)).toEqual(['started']);
    await at(200 + FIXED_COPY_MS / 10);
    expect(states(ids)).toEqual(['replicated']);
    await at(200 + FIXED_COPY_MS / 10 + FIXED_CLEANUP_MS / 10);
    expect(states(ids)).toEqual(['finished']);
  });

  it('go on after a restart where they were: the copies left share the disk again and end on time', async () => {
    const first = setup(BANDWIDTH_SEED);
    const ids = await first.moveAll(2);
    await first.at(1000);
    first.engine.close();
    // Halfway through: each copy has 5 MiB left at 5 MiB/s.
    const second = setup(BANDWIDTH_SEED, { restart: { db: first.db, ms: 1000 } });
    await second.at(1000);
    await second.at(2000 + FIXED_COPY_MS - 1);
    expect(second.states(ids)).toEqual(['started']);
    await second.at(2000 + FIXED_COPY_MS);
    expect(second.states(ids)).toEqual(['replicated']);
    await second.at(2000 + FIXED_COPY_MS + FIXED_CLEANUP_MS);
    expect(second.states(ids)).toEqual(['finished']);
  });

  it('forget the copies a rolled-back tick started, so they take no bandwidth from the others', async () => {
    // C (100 MiB) copies from nfs-1 alone at 10 MiB/s; A, on disks without a bandwidth, ends at
    // 500 ms; its worker then takes B (10 MiB, from nfs-1), but the tick fails writing B's start.
    const { db, at, schedule, states } = setup(
      seedText(['storage_bandwidth: { nfs-1: 10MiB }'], ['nfs-1:100', 'default:10', 'nfs-1:10']),
      { workers: 2 },
    );
    const [c, a, b] = schedule([1, 2, 3]) as [number, number, number];
    db.exec(
      `CREATE TRIGGER fail_b BEFORE UPDATE OF state ON moves WHEN NEW.id = ${b} AND NEW.state = 'started'
       BEGIN SELECT RAISE(ABORT, 'the disk holding the database is full'); END`,
    );
    await at(0);
    await at(500);
    await at(1500);
    // Each failing tick rolls back whole: A's end too.
    expect(states([a, b])).toEqual(['started', 'scheduled']);
    db.exec('DROP TRIGGER fail_b');
    // B starts at 1950 (a freed worker starts at most 50 ms in the past). C had 85 MiB left at the
    // last rebuild (1500), copied 4.5 of them alone, then shares nfs-1 with B until B's end at 3950:
    // 70.5 MiB left, alone again, end at 11 000.
    await at(2000);
    expect(states([a, b])).toEqual(['finished', 'started']);
    await at(11_000 + FIXED_COPY_MS - 1);
    expect(states([c])).toEqual(['started']);
    await at(11_000 + FIXED_COPY_MS);
    expect(states([c])).toEqual(['replicated']);
  });

  it('without a bandwidth keeps the size-based timing, and counts the bytes whole at each copy end', async () => {
    const { at, moveAll, states, gauge } = setup(seedText([]));
    const ids = await moveAll(4);
    // 50 ms per MB at speed 1 (./policy.ts): 500 ms, 90% copying, whatever runs beside it.
    await at(449);
    expect(states(ids)).toEqual(['started']);
    expect(gauge('nfs-1')?.readBytes).toBe(0);
    await at(450);
    expect(states(ids)).toEqual(['replicated']);
    expect(gauge('nfs-1')?.readBytes).toBe(40 * MIB);
    expect(gauge('cluster')?.writtenBytes).toBe(40 * MIB);
    await at(500);
    expect(states(ids)).toEqual(['finished']);
  });
});
