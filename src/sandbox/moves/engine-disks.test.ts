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

/** Sixteen 10 MiB projects on nfs-1; `instance` lines are added to the instance. */
function seedText(instance: string[]): string {
  return [
    'instance:',
    '  storages: [default, nfs-1, cluster]',
    `  storage_capacity: { cluster: ${100 * 1024 * MIB} }`,
    ...instance.map((l) => `  ${l}`),
    'users: [{ id: 1, username: root, admin: true }]',
    'inventory:',
    '  projects:',
    ...Array.from({ length: 16 }, (_, i) => `    - { id: ${i + 1}, storage: nfs-1, size_mb: 10 }`),
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

/** An engine on a manual clock; `at(ms)` moves the clock to `ms` after the start and lets it run. */
function setup(seed: string, speed = 1) {
  const db = openDatabase();
  dbs.push(db);
  const t0 = Date.parse('2026-06-01T00:00:00Z');
  let now = t0;
  applySeed(db, parseSeed(seed), now);
  const config = getMeta<InstanceConfig>(db, 'config') as InstanceConfig;
  const engine = createMoveEngine(
    { db, config, clock: { ...systemClock, now: () => now }, log: pino({ level: 'silent' }), faults: noFaults },
    { workers: 20, speed },
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
  return { engine, at, moveAll, states, gauge };
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
    const { at, moveAll, states } = setup(BANDWIDTH_SEED, 10);
    const ids = await moveAll(2);
    await at(200 + FIXED_COPY_MS / 10 - 1);
    expect(states(ids)).toEqual(['started']);
    await at(200 + FIXED_COPY_MS / 10);
    expect(states(ids)).toEqual(['replicated']);
    await at(200 + FIXED_COPY_MS / 10 + FIXED_CLEANUP_MS / 10);
    expect(states(ids)).toEqual(['finished']);
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
