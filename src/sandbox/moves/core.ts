/**
 * What every part of the move engine shares (./engine.ts): the service's state, the statements
 * prepared once, the queue of scheduled moves and the moves running now, and the questions about a
 * move that scheduling, the state steps and the exporters all ask (does it copy, does it fail, how
 * much has it written).
 */
import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import type { Db, ItemKind, Statement } from '../db.js';
import type { Faults } from '../faults.js';
import type { InstanceConfig } from '../seed-schema.js';
import { hasGroupWikiRepositories } from '../inventory/items.js';
import type { MoveStatements } from './store.js';
import { moveStatements } from './store.js';
import { splitDuration } from './policy.js';
import { copyFailureMessage, unavailableError } from './failures.js';
import { hasMoveLease } from './releases.js';
import type { RoomLedger } from './room.js';
import { bytesOf, createRoomLedger } from './room.js';
import type { PoolKeeper } from './pools.js';
import { createPoolKeeper } from './pools.js';
import type { LoadTracker } from './load.js';
import { createLoadTracker, grpcCodeOf } from './load.js';
import type { CopyBook } from './copies.js';
import { createCopyBook } from './copies.js';
import type { DiskModel } from './disks.js';
import { createDiskModel } from './disks.js';

/** Everything the engine needs from the service's state. */
export interface EngineDeps {
  db: Db;
  config: InstanceConfig;
  clock: Clock;
  log: Logger;
  faults: Faults;
}

export interface EngineOptions {
  workers: number;
  speed: number;
  /** Fixed duration of every move in ms; when unset, duration follows repository size. */
  moveDurationMs?: number;
  /** Source of randomness for destination picks (default Math.random). */
  random?: () => number;
  /** Items per bulk-schedule batch (one transaction each); default 500. */
  bulkBatchSize?: number;
  /**
   * How long a bulk job waits in Sidekiq's queue before it runs, from its POST, on the sandbox's
   * clock (ms); default 0. A job runs once it is due and every earlier one has started.
   */
  bulkDelayMs?: number;
}

/** How far in the past a freed worker may start its next move (see ./engine.ts). */
export const MAX_LAG_MS = 50;

/** A move as the engine carries it (queue entries are only ids, so a million queued moves stay small). */
export interface Queued {
  id: number;
  kind: ItemKind;
  itemId: number;
  source: string;
  destination: string;
  fate: string;
  durationMs: number;
  readyAt: number;
}

export interface Running extends Queued {
  phase: 'started' | 'replicated';
  due: number;
  snapshotChecksum: string;
  snapshotCommits: number;
  /** The item's size (a project's repository and wiki), for the copies the move makes and leaves. */
  sizeMb: number;
  /** What the copy writes on the destination: the item, plus its pool's objects and pool copy (./pools.ts). */
  copyMb: number;
  /** The fork network whose pool this copy also copies onto the destination, when it does. */
  poolCopyOf?: number;
  /** When the copy started (the room it takes on the destination grows from here). */
  startedAt: number;
  /**
   * The fixed part after the transfer (job start, checksum, switch), when the copy's time follows
   * the disks' bandwidth (./bandwidth.ts); the due time then moves as the disks' shares change.
   */
  tailMs?: number;
}

/** Scheduled move ids in FIFO order; `head` is the next to take (the array is compacted now and then). */
export interface MoveQueue {
  ids: number[];
  head: number;
}

/** The item columns the engine reads besides the move statements. */
export interface EngineReads {
  countItemMoves: ReturnType<typeof prepareCountItemMoves>;
  /** What scheduling re-reads of the item under its transaction: three columns, not the row's fifteen. */
  itemForMove: ReturnType<typeof prepareItemForMove>;
  /**
   * What a starting move snapshots of its item. A project move copies its wiki after its
   * repository (`mirror_repositories`), so its size is both; `wiki_mb` is the wiki's part.
   */
  itemForCopy: ReturnType<typeof prepareItemForCopy>;
  wikiOf: ReturnType<typeof prepareWikiOf>;
}

/** The engine's shared state: each part reads and changes the queue and the running set here. */
export interface EngineCore extends EngineDeps {
  options: EngineOptions;
  s: MoveStatements;
  reads: EngineReads;
  workers: number;
  random: () => number;
  /**
   * The container's exclusive lease (16.6): before it a second job is never refused, and a rerun
   * of an interrupted job finds its move `started` and does nothing (./releases.ts).
   */
  lease: boolean;
  room: RoomLedger;
  /** Fork networks: a project's object pool follows (or, before 16.3/16.6, leaves) it at the switch. */
  pools: PoolKeeper;
  /** Workers, disks and Gitaly calls the running moves keep busy (./load.ts). */
  tracker: LoadTracker;
  book: CopyBook;
  queue: MoveQueue;
  running: Running[];
  /** The disks' bandwidth model (./disks.ts), when the seed gives bandwidths and no fixed duration is set. */
  disks: DiskModel | null;
  /** Bytes read from and written to each storage by copies outside the disk model, whole at each copy's end. */
  copiedBytes: Map<string, { read: number; written: number }>;
  /** due_at_ms, id: a bandwidth-bound copy's end moved. */
  setDue: Statement<[number, number]>;
}

function prepareCountItemMoves(db: Db) {
  return db.prepare<[ItemKind, number], { n: number }>(
    'SELECT count(*) AS n FROM moves WHERE kind = ? AND item_id = ?',
  );
}

function prepareItemForMove(db: Db) {
  return db.prepare<[ItemKind, number], { read_only: number; storage: string; size_mb: number }>(
    'SELECT read_only, storage, size_mb + wiki_mb AS size_mb FROM items WHERE kind = ? AND id = ?',
  );
}

function prepareItemForCopy(db: Db) {
  return db.prepare<[ItemKind, number], { checksum: string; commit_count: number; size_mb: number; wiki_mb: number }>(
    'SELECT checksum, commit_count, size_mb + wiki_mb AS size_mb, wiki_mb FROM items WHERE kind = ? AND id = ?',
  );
}

function prepareWikiOf(db: Db) {
  return db.prepare<[ItemKind, number], { wiki_mb: number }>('SELECT wiki_mb FROM items WHERE kind = ? AND id = ?');
}

/** The shared state of a new engine: nothing queued, nothing running. */
export function createEngineCore(deps: EngineDeps, options: EngineOptions): EngineCore {
  const { db, config } = deps;
  const s = moveStatements(db);
  const room = createRoomLedger(db, (kind) => hasRepository(config, kind));
  const pools = createPoolKeeper(db, config.version, room);
  const core: EngineCore = {
    ...deps,
    options,
    s,
    reads: {
      countItemMoves: prepareCountItemMoves(db),
      itemForMove: prepareItemForMove(db),
      itemForCopy: prepareItemForCopy(db),
      wikiOf: prepareWikiOf(db),
    },
    workers: Math.max(1, Math.floor(options.workers)),
    random: options.random ?? Math.random,
    lease: hasMoveLease(config.version),
    room,
    pools,
    tracker: createLoadTracker(),
    book: createCopyBook(s, room, pools, () => core.running),
    queue: { ids: [], head: 0 },
    running: [],
    disks: diskModelOf(deps, options),
    copiedBytes: new Map(),
    setDue: db.prepare<[number, number]>('UPDATE moves SET due_at_ms = ? WHERE id = ?'),
  };
  return core;
}

/** The disk model when the seed gives any storage a bandwidth; a fixed move duration overrides it. */
function diskModelOf(deps: EngineDeps, options: EngineOptions): DiskModel | null {
  const bandwidth = deps.config.storage_bandwidth ?? {};
  if (Object.keys(bandwidth).length === 0 || options.moveDurationMs !== undefined) return null;
  return createDiskModel({
    bandwidth,
    windows: deps.config.disk_busy ?? [],
    origin: deps.clock.now(),
    speed: options.speed > 0 ? options.speed : 1,
  });
}

/** Whether items of `kind` have a repository for a move to copy (groups: their wiki, EE only). */
export function hasRepository(config: InstanceConfig, kind: ItemKind): boolean {
  return kind !== 'group' || hasGroupWikiRepositories(config);
}

/** Whether the move copies a repository (not to the same storage, and the item has one). */
export function copies(core: EngineCore, r: Queued): boolean {
  return r.source !== r.destination && hasRepository(core.config, r.kind);
}

/** Whether `storage` is seeded unreachable (its Gitaly answers nothing). */
export function unreachable(core: EngineCore, storage: string): boolean {
  return core.config.unreachable.includes(storage);
}

/**
 * Why the copy fails (the exception, untruncated: the move entity truncates it, from 16.7 only),
 * or null when it succeeds.
 */
export function copyFailure(core: EngineCore, m: Queued, snapshotChecksum: string): string | null {
  for (const storage of [m.source, m.destination]) {
    if (unreachable(core, storage)) return unavailableError(storage);
  }
  return copyFailureMessage(m, snapshotChecksum, core.config.version);
}

/** The seeded size of `storage`'s filesystem in bytes, if any. */
export function capacityOf(core: EngineCore, storage: string): number | undefined {
  return core.config.storage_capacity?.[storage];
}

/**
 * What a started move has written to its destination by `t`: linear over its planned copy time, or
 * what the disk model transferred. With `reserve`, all it will write.
 */
export function copiedBytes(core: EngineCore, r: Running, t: number, reserve = false): number {
  if (r.tailMs !== undefined && core.disks) return core.disks.transferred(r.id, reserve ? Number.POSITIVE_INFINITY : t);
  if (reserve) t = r.due;
  const full = bytesOf(r.copyMb);
  const { copyMs } = splitDuration(r.durationMs);
  if (copyMs <= 0) return full;
  return Math.round(full * Math.min(1, Math.max(0, (Math.min(t, r.due) - r.startedAt) / copyMs)));
}

/**
 * Bytes on `storage` at `t`: settled ones, what started moves have copied onto it, and the source
 * copies of moves in cleanup. With `reserve`, a copy counts whole from its start (what it will
 * write, up to its failure point for a move out of room): what a new copy has to fit beside.
 */
export function usedBytes(core: EngineCore, storage: string, t: number, reserve = false): number {
  let used = core.room.settled(storage);
  for (const r of core.running) {
    if (!copies(core, r)) continue;
    if (r.phase === 'started' && r.destination === storage) used += copiedBytes(core, r, t, reserve);
    else if (r.phase === 'replicated' && r.source === storage) used += bytesOf(r.sizeMb);
  }
  return used;
}

/**
 * Whether `r`'s copy calls ReplicateRepository on a Gitaly: it copies, and neither storage is
 * unreachable (that call fails before any Gitaly handles it, UNAVAILABLE).
 */
export function replicates(core: EngineCore, r: Queued, failure: string | null): boolean {
  return copies(core, r) && !(failure !== null && grpcCodeOf(failure) === 'Unavailable');
}

/** The gRPC code `r`'s ReplicateRepository call returns: a job killed mid-copy cancels it. */
export function copyCode(r: Running, failure: string | null): string {
  if (failure !== null) return grpcCodeOf(failure) ?? 'OK';
  return r.fate === 'interrupted' ? 'Canceled' : 'OK';
}

/** What a move's copy writes, and the copies moves leave (./copies.ts). */
export function copyWrites(core: EngineCore, q: Queued, sizeMb: number): { mb: number; poolCopyOf?: number } {
  return core.book.writes(q, sizeMb, copies(core, q));
}
