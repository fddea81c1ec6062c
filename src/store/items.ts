/**
 * The item-level checkpoint: one row per item, enumeration cursors and bulk bookkeeping. Every
 * statement is prepared once; callers group updates with `batch` so a page or a poll round is one
 * transaction.
 */
import type Database from 'better-sqlite3';
import type { UnlistableGap } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import { itemSchemaOf, itemStatements } from './item-statements.js';
import type { ItemStatements } from './item-statements.js';
import { ShapeTable } from './shape.js';
import { ITEM_STATES } from './types.js';
import type {
  BulkRow,
  EnumCursor,
  GivenList,
  ItemRow,
  ItemState,
  ItemStore,
  NetworkMemberRow,
  NetworkRow,
  PlacedRow,
} from './types.js';

interface RawItem {
  kind: Kind;
  id: number;
  source: string;
  name: string;
  size_bytes: number | null;
  state: ItemState;
  attempts: number;
  move_id: number | null;
  move_state: string | null;
  last_error: string | null;
  next_attempt_at: number;
  intent_at: number | null;
  scheduled_at: number | null;
  moved_at: number | null;
  stuck_at: number | null;
  read_only: number | null;
  seen_round: number;
  listed_at: number;
  running_at?: number | null;
  destination?: string | null;
  network?: number | null;
  rank_bytes?: number | null;
}

function toRow(r: RawItem): ItemRow {
  return {
    kind: r.kind,
    id: r.id,
    source: r.source,
    name: r.name,
    sizeBytes: r.size_bytes,
    state: r.state,
    attempts: r.attempts,
    moveId: r.move_id,
    moveState: r.move_state,
    lastError: r.last_error,
    nextAttemptAt: r.next_attempt_at,
    intentAt: r.intent_at,
    scheduledAt: r.scheduled_at,
    runningAt: r.running_at ?? null,
    movedAt: r.moved_at,
    stuckAt: r.stuck_at,
    readOnly: r.read_only === null ? null : r.read_only === 1,
    seenRound: r.seen_round,
    listedAt: r.listed_at,
    destination: r.destination ?? null,
    network: r.network ?? null,
    // Only a network's members rank by other bytes than their own: other rows leave it out.
    ...(r.rank_bytes !== null && r.rank_bytes !== undefined ? { rankBytes: r.rank_bytes } : {}),
  };
}

/** Reason recorded when a moved item is still listed on its source (GitLab issue 345591). */
export const STILL_ON_SOURCE = 'move finished but the item is still listed on the source (GitLab issue 345591)';

/** SQLite-backed ItemStore over an open, migrated database: the statements of ./item-statements.ts, run. */
export class ItemTable implements ItemStore {
  private readonly s: ItemStatements;
  private readonly inTx: () => boolean;
  /** The checkpoint has the per-item destination (schema 15): an intent writes it in the same statement. */
  private readonly has15: boolean;
  readonly shape: ShapeTable;

  constructor(protected readonly db: Database.Database) {
    this.inTx = () => db.inTransaction;
    this.shape = new ShapeTable(db);
    const schema = itemSchemaOf(db);
    this.has15 = schema.has15;
    this.s = itemStatements(schema);
  }

  batch<T>(fn: () => T): T {
    if (this.inTx()) return fn();
    return this.db.transaction(fn).immediate();
  }

  getCursor(kind: Kind, source: string): EnumCursor | null {
    const r = this.s.getCursor.get(kind, source) as { round: number; after_id: number; done: number } | undefined;
    return r ? { round: r.round, afterId: r.after_id, done: r.done === 1 } : null;
  }

  startRound(kind: Kind, source: string, round: number): void {
    this.s.putCursor.run(kind, source, round, 0, 0);
  }

  recordPage(
    ...[kind, source, round, items, now]: Parameters<ItemStore['recordPage']>
  ): ReturnType<ItemStore['recordPage']> {
    return this.batch(() => {
      let added = 0;
      const back: ItemRow[] = [];
      let afterId = this.getCursor(kind, source)?.afterId ?? 0;
      for (const it of items) {
        afterId = Math.max(afterId, it.id);
        if (this.s.insertItem.run(kind, it.id, source, it.name, it.sizeBytes, round, now).changes === 1) {
          added++;
          continue;
        }
        const row = this.getItem(kind, it.id);
        if (!row) continue;
        if (row.state === 'moved' || row.state === 'left') {
          const reason = row.state === 'moved' ? STILL_ON_SOURCE : 'listed on the source again';
          this.s.backToPending.run(source, reason, round, now, kind, it.id);
          back.push({ ...row, state: 'pending', lastError: reason });
        } else {
          this.s.seen.run(round, it.name, it.sizeBytes, now, kind, it.id);
        }
      }
      this.s.putCursor.run(kind, source, round, afterId, 0);
      return { added, back };
    });
  }

  countStaleListed(kind: Kind, source: string, before: number): number {
    return (this.s.staleListed.get(kind, source, before) as { n: number }).n;
  }

  touchListed(kind: Kind, source: string, ids: readonly number[], now: number): void {
    this.batch(() => {
      for (const id of ids) this.s.touchListed.run(now, kind, id, source);
    });
  }

  absentItems(kind: Kind, source: string, round: number, limit: number): ItemRow[] {
    return (this.s.absent.all(kind, source, round, limit) as RawItem[]).map(toRow);
  }

  markSeen(kind: Kind, id: number, round: number, now: number): void {
    this.s.markSeen.run(round, now, kind, id);
  }

  finishRound(kind: Kind, source: string, round: number): void {
    const c = this.getCursor(kind, source);
    this.s.putCursor.run(kind, source, round, c?.afterId ?? 0, 1);
  }

  recordUnlistable(kind: Kind, source: string, round: number, gap: UnlistableGap, now: number): void {
    this.s.addUnlistable.run(kind, source, round, gap.id, gap.afterId, gap.beforeId, gap.reason, now);
  }

  unlistable(kind: Kind, source: string, round: number): UnlistableGap[] {
    const rows = this.s.unlistable.all(kind, source, round) as {
      item_id: number | null;
      after_id: number | null;
      before_id: number | null;
      reason: string;
    }[];
    return rows.map((r) => ({ kind, id: r.item_id, afterId: r.after_id, beforeId: r.before_id, reason: r.reason }));
  }

  getItem(kind: Kind, id: number): ItemRow | null {
    const r = this.s.getItem.get(kind, id) as RawItem | undefined;
    return r ? toRow(r) : null;
  }

  dueItems(kind: Kind, source: string, now: number, limit: number): ItemRow[] {
    const out: ItemRow[] = [];
    if (limit <= 0) return out;
    // The walk follows the index's order: leaving it after `limit` rows reads no more of them.
    for (const r of this.s.due.iterate(kind, source, now) as IterableIterator<RawItem>) {
      out.push(toRow(r));
      if (out.length >= limit) break;
    }
    return out;
  }

  nextDueAt(kind: Kind, source: string): number | null {
    return (this.s.nextDue.get(kind, source) as { t: number | null }).t;
  }

  openItems(limit: number): ItemRow[] {
    return (this.s.open.all(limit) as RawItem[]).map(toRow);
  }

  leftSelection(limit: number): { rows: ItemRow[]; total: number } {
    return {
      rows: (this.s.leftSelection.all(limit) as RawItem[]).map(toRow),
      total: (this.s.countLeftSelection.get() as { n: number }).n,
    };
  }

  itemsInState(kind: Kind, source: string | null, state: ItemState, limit: number): ItemRow[] {
    const raw =
      source === null ? this.s.inStateAll.all(kind, state, limit) : this.s.inStateOf.all(kind, source, state, limit);
    return (raw as RawItem[]).map(toRow);
  }

  /**
   * Known sizes of the items in `state` on (kind, source), summed by SQLite: the dry-run estimate
   * over a million items must not read a million rows into memory.
   */
  sizeStats(kind: Kind, source: string, state: ItemState): { bytes: number; sized: number; maxBytes: number } {
    const r = this.s.sizeStats.get(kind, source, state) as {
      bytes: number | null;
      sized: number;
      max_bytes: number | null;
    };
    return { bytes: r.bytes ?? 0, sized: r.sized, maxBytes: r.max_bytes ?? 0 };
  }

  movingSizeStats(kind: Kind, source: string): { bytes: number; sized: number; maxBytes: number } {
    const r = this.s.movingSizeStats.get(kind, source) as {
      bytes: number | null;
      sized: number;
      max_bytes: number | null;
    };
    return { bytes: r.bytes ?? 0, sized: r.sized, maxBytes: r.max_bytes ?? 0 };
  }

  countInFlight(): number {
    return (this.s.countInFlight.get() as { n: number }).n;
  }

  countStates(kind: Kind, source: string): Record<ItemState, number> {
    const out = Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>;
    for (const r of this.s.countStates.all(kind, source) as { state: ItemState; n: number }[]) out[r.state] = r.n;
    return out;
  }

  markIntent(kind: Kind, id: number, now: number, destination?: string): boolean {
    if (destination !== undefined && this.has15)
      return this.s.intentPlaced.run(now, destination, kind, id).changes === 1;
    if (this.s.intent.run(now, kind, id).changes !== 1) return false;
    if (destination !== undefined) this.s.place.run(destination, kind, id);
    return true;
  }

  markIntentFromQuarantine(kind: Kind, id: number, now: number): boolean {
    return this.s.intentFromQuarantine.run(now, kind, id).changes === 1;
  }

  setSelected(kind: Kind, id: number, selected: boolean): boolean {
    return (selected ? this.s.reselect : this.s.unselect).run(kind, id).changes === 1;
  }

  leaveSelection(kind: Kind, id: number, reason: string): boolean {
    return this.s.leaveSelection.run(reason, kind, id).changes === 1;
  }

  givenList(): GivenList | null {
    const r = this.s.getGiven.get() as
      { digest: string; file: string; plan_hash: string; items: number; seeded_at: number } | undefined;
    return r ? { digest: r.digest, file: r.file, planHash: r.plan_hash, items: r.items, seededAt: r.seeded_at } : null;
  }

  setGivenList(list: GivenList): void {
    const held = this.givenList();
    if (held && held.digest !== list.digest)
      throw new Error(`the checkpoint was seeded from another item list (${held.digest})`);
    if (!held) this.s.putGiven.run(list.digest, list.file, list.planHash, list.items, list.seededAt);
  }

  pinDestination(kind: Kind, id: number, destination: string): boolean {
    return this.s.pin.run(destination, kind, id).changes === 1;
  }

  setNetwork(kind: Kind, id: number, network: number | null): void {
    this.s.setNetwork.run(network, kind, id);
  }

  noteNetwork(...[kind, ids, network, rootStorage, poolBytes]: Parameters<ItemStore['noteNetwork']>): number {
    return this.batch(() => {
      const before = this.getNetwork(network);
      this.s.putNetwork.run(network, rootStorage, poolBytes);
      // The network's bytes are what it lands with on one destination: each member with the pool's
      // objects (its copy holds its alternates'), plus one pool copy. They grow by the new members
      // (and by the pool, once known: once for the copy and once per member counted before), counted
      // as they come, never summed again over every member (a page of a large network would be
      // quadratic); the members are counted once, when the pool becomes known.
      let bytes = before?.bytes ?? 0;
      const pool = before?.poolBytes ?? poolBytes ?? 0;
      if ((before?.poolBytes ?? null) === null && poolBytes !== null)
        bytes += poolBytes * (1 + (before ? (this.s.countNetwork.get(network) as { n: number }).n : 0));
      const fresh: number[] = [];
      for (const id of ids) {
        const row = this.getItem(kind, id);
        if (!row || row.network === network) continue;
        bytes += (row.sizeBytes ?? 0) + pool;
        fresh.push(id);
        this.s.setNetwork.run(network, kind, id);
      }
      this.s.setNetworkBytes.run(bytes, poolBytes, network);
      // Every member ranks by the network's bytes; only the size class orders, so all members are
      // ranked again only when the class changes (a few times per network), else just the new ones.
      const classOf = (b: number) => (b >= 1 ? Math.floor(Math.log2(b)) : -1);
      if (before === null || classOf(before.bytes) !== classOf(bytes)) this.s.rankNetwork.run(bytes, network);
      else for (const id of fresh) this.s.rankItem.run(bytes, kind, id);
      return bytes;
    });
  }

  getNetwork(network: number): NetworkRow | null {
    return (this.s.getNetwork.get(network) as NetworkRow | undefined) ?? null;
  }

  networks(): NetworkRow[] {
    return this.s.allNetworks.all() as NetworkRow[];
  }

  networkMembers(): NetworkMemberRow[] {
    return this.s.networkMembers.all() as NetworkMemberRow[];
  }

  networkPlacements(): { networks: Map<number, string>; split: Set<number> } {
    const rows = this.s.networkPlacements.all() as { network: number; destination: string; n: number }[];
    return {
      networks: new Map(rows.filter((r) => r.n === 1).map((r) => [r.network, r.destination])),
      split: new Set(rows.filter((r) => r.n > 1).map((r) => r.network)),
    };
  }

  placedNetworkMembers(): { network: number; destination: string; members: number }[] {
    return this.s.placedMembers.all() as { network: number; destination: string; members: number }[];
  }

  placedBytes(): PlacedRow[] {
    return this.s.placed.all() as PlacedRow[];
  }

  duePlacedItems(kind: Kind, source: string, now: number, limit: number): ItemRow[] {
    return (this.s.duePlaced.all(kind, source, now, limit) as RawItem[]).map(toRow);
  }

  nextPlacedDueAt(kind: Kind, source: string): number | null {
    return (this.s.nextPlacedDue.get(kind, source) as { t: number | null }).t;
  }

  unplacedPendingIds(kind: Kind, source: string): number[] {
    return this.s.unplacedPendingIds.pluck().all(kind, source) as number[];
  }

  unplacedPendingKeys(kind: Kind, source: string): { ids: number[]; classes: number[]; groups: number[] } {
    const out = { ids: [] as number[], classes: [] as number[], groups: [] as number[] };
    // Three flat arrays rather than a row object per item: a million items stay a few tens of MB.
    for (const r of this.s.unplacedPendingKeys.raw().iterate(kind, source) as Iterable<[number, number, number]>) {
      out.ids.push(r[0]);
      out.classes.push(r[1]);
      out.groups.push(r[2]);
    }
    return out;
  }

  itemsByIds(kind: Kind, ids: readonly number[]): ItemRow[] {
    const out: ItemRow[] = [];
    for (const id of ids) {
      const row = this.getItem(kind, id);
      if (row) out.push(row);
    }
    return out;
  }

  countUnplaced(kind: Kind, source: string): number {
    return (this.s.countUnplaced.get(kind, source) as { n: number }).n;
  }

  getBound(source: string): { reachedAt: number; note: string } | null {
    const r = this.s.getBound.get(source) as { reached_at: number; note: string } | undefined;
    return r ? { reachedAt: r.reached_at, note: r.note } : null;
  }

  setBound(source: string, at: number, note: string): void {
    this.s.putBound.run(source, at, note);
  }

  markInFlight(kind: Kind, id: number, moveId: number, moveState: string, since: number): void {
    this.s.inFlight.run(moveId, since, moveId, moveId, moveState, kind, id);
  }

  markMoveState(kind: Kind, id: number, moveState: string): void {
    this.s.moveState.run(moveState, kind, id);
  }

  markRunning(kind: Kind, id: number, at: number): void {
    this.s.running.run(at, kind, id);
  }

  markMoved(...[kind, id, moveId, moveState, now, note]: Parameters<ItemStore['markMoved']>): void {
    this.s.moved.run(moveId, moveState, now, note, kind, id);
  }

  markPending(kind: Kind, id: number, nextAttemptAt: number, lastError: string | null, refundAttempt: boolean): void {
    this.s.pending.run(nextAttemptAt, lastError, refundAttempt ? 1 : 0, kind, id);
  }

  markLeft(kind: Kind, id: number, now: number, note: string | null): void {
    this.s.left.run(now, note, kind, id);
  }

  markQuarantined(
    kind: Kind,
    id: number,
    reason: string,
    stuck: { at: number; readOnly: boolean | null } | null,
  ): void {
    const ro = stuck?.readOnly === undefined || stuck.readOnly === null ? null : stuck.readOnly ? 1 : 0;
    this.s.quarantine.run(reason, stuck?.at ?? null, ro, kind, id);
  }

  getBulk(kind: Kind, source: string): BulkRow | null {
    const r = this.s.getBulk.get(kind, source) as
      { state: BulkRow['state']; intent_at: number; seen_max_move_id: number; confirmed_at: number | null } | undefined;
    return r
      ? {
          kind,
          source,
          state: r.state,
          intentAt: r.intent_at,
          seenMaxMoveId: r.seen_max_move_id,
          confirmedAt: r.confirmed_at,
        }
      : null;
  }

  setBulk(row: BulkRow): void {
    this.s.putBulk.run(row.kind, row.source, row.state, row.intentAt, row.seenMaxMoveId, row.confirmedAt ?? null);
  }

  getMoveModel(kind: Kind): string | null {
    return (this.s.getModel.get(kind) as { data: string } | undefined)?.data ?? null;
  }

  setMoveModel(kind: Kind, data: string, now: number): void {
    this.s.putModel.run(kind, data, now);
  }

  getAutoCap(): string | null {
    return (this.s.getAutoCap.get() as { data: string } | undefined)?.data ?? null;
  }

  setAutoCap(data: string, now: number): void {
    this.s.putAutoCap.run(data, now);
  }
}
