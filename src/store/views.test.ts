import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { ItemRecord } from '../api/types.js';
import { Checkpoint, openCheckpoint } from './checkpoint.js';
import { hasColumn, hasIndex, hasTable, prepareIf } from './introspect.js';
import { itemSchemaOf } from './item-statements.js';
import { migrate, SCHEMA_VERSION } from './schema.js';
import type {
  ControlStore,
  DrainStore,
  ForwardCheckpoint,
  GateStore,
  GivenListSeedStore,
  ItemLookup,
  ListStore,
  MoveModelStore,
  ObserverStore,
  PlacementStore,
  PreflightStore,
  RevertSeedStore,
  StatusStore,
  VerifyStore,
  WeightsStore,
} from './views.js';

const project = (id: number, sizeBytes: number | null): ItemRecord => ({
  kind: 'projects',
  id,
  storage: 'nfs-1',
  name: `p${id}`,
  sizeBytes,
});

/** A checkpoint migrated only up to `version`, opened as a read-only `status` would find it. */
function olderFile(version: number): Checkpoint {
  const db = new Database(':memory:');
  migrate(db, ':memory:', version);
  return new Checkpoint(':memory:', db);
}

describe('views of the checkpoint', () => {
  it('are all met by the one checkpoint object, each with only its own methods', () => {
    const store = openCheckpoint(':memory:');
    // The one object is what the runtime passes wherever a view is wanted.
    const views: {
      drain: DrainStore;
      verify: VerifyStore;
      preflight: PreflightStore;
      weights: WeightsStore;
      gate: GateStore;
      lookup: ItemLookup;
      revertSeed: RevertSeedStore;
      givenList: GivenListSeedStore;
      forward: ForwardCheckpoint;
      list: ListStore;
      status: StatusStore;
      observer: ObserverStore;
      control: ControlStore;
      placement: PlacementStore;
      moveModel: MoveModelStore;
    } = {
      drain: store,
      verify: store,
      preflight: store,
      weights: store,
      gate: store,
      lookup: store,
      revertSeed: store,
      givenList: store,
      forward: store,
      list: store,
      status: store,
      observer: store,
      control: store,
      placement: store,
      moveModel: store,
    };
    const { drain, verify, forward, list, status, observer, weights, revertSeed, placement, moveModel } = views;
    // The drain seeds neither a revert nor a reviewed list, and holds no lock or snapshot.
    // @ts-expect-error the drain's view has no revert's or list's seeding
    expect(typeof drain.setGivenList).toBe('function');
    // @ts-expect-error the drain's view has no run lock
    void drain.acquireLock;
    // @ts-expect-error the drain's view does not write the machine snapshot
    void drain.saveRun;
    // @ts-expect-error verify reads rows, it does not move them
    void verify.markIntent;
    // @ts-expect-error revert reads the forward checkpoint and never writes its rows
    void forward.markMoved;
    // @ts-expect-error nor its snapshot
    void forward.saveRun;
    // @ts-expect-error a reviewed list is read, never logged to
    void list.appendEvent;
    // @ts-expect-error status reads only: no live overrides written
    void status.writeControl;
    // @ts-expect-error observers read the run, they do not release quarantined items
    void observer.releaseQuarantined;
    // @ts-expect-error the weights step touches no item row
    void weights.getItem;
    // @ts-expect-error seeding a revert does not take the lock over
    void revertSeed.forceUnlock;
    // @ts-expect-error placing an item on a destination does not schedule its move
    void placement.markIntent;
    // @ts-expect-error the move model reads no row
    void moveModel.getItem;
    store.close();
  });
});

describe('item statements by concern', () => {
  it('knows what a current file has, and what an older unmigrated one lacks', () => {
    const current = openCheckpoint(':memory:');
    const fresh = new Database(':memory:');
    migrate(fresh, ':memory:');
    expect(itemSchemaOf(fresh)).toMatchObject({ has7: true, has10: true, has15: true, has19: true });
    const old = new Database(':memory:');
    migrate(old, ':memory:', 9);
    expect(itemSchemaOf(old)).toMatchObject({ has7: true, has10: false, has15: false, has19: false });
    expect(itemSchemaOf(old).order).toBe('size_bytes DESC, id');
    const older = new Database(':memory:');
    migrate(older, ':memory:', 5);
    expect(itemSchemaOf(older)).toMatchObject({ has7: false, has10: false });
    current.close();
  });

  it('reads networks, members and placements under the row types’ own field names', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('projects', 'nfs-1', 1);
    s.recordPage('projects', 'nfs-1', 1, [project(1, 100), project(2, null), project(3, 50)], 0);
    s.finishRound('projects', 'nfs-1', 1);
    s.noteNetwork('projects', [1, 2], 1, 'nfs-1', 10);
    expect(s.getNetwork(1)).toEqual({ id: 1, rootStorage: 'nfs-1', poolBytes: 10, bytes: 130 });
    expect(s.getNetwork(9)).toBeNull();
    expect(s.networks()).toEqual([{ id: 1, rootStorage: 'nfs-1', poolBytes: 10, bytes: 130 }]);
    s.markIntent('projects', 1, 5, 'nfs-2');
    s.markMoved('projects', 1, 70, 'finished', 9, null);
    s.markIntent('projects', 3, 6, 'nfs-2');
    expect(s.networkMembers()).toEqual([
      { network: 1, id: 1, name: 'p1', source: 'nfs-1', destination: 'nfs-2', state: 'moved', sizeBytes: 100 },
      { network: 1, id: 2, name: 'p2', source: 'nfs-1', destination: null, state: 'pending', sizeBytes: null },
    ]);
    expect(s.placedBytes()).toEqual([
      {
        destination: 'nfs-2',
        kind: 'projects',
        source: 'nfs-1',
        items: 2,
        bytes: 150,
        unsized: 0,
        movedItems: 1,
        movedBytes: 100,
        movedUnsized: 0,
      },
    ]);
    expect(s.getItem('projects', 1)).toMatchObject({ state: 'moved', moveId: 70, moveState: 'finished', movedAt: 9 });
    s.close();
  });

  it('answers an older file read for status with nothing rather than failing', () => {
    const s = olderFile(14);
    expect(s.networks()).toEqual([]);
    expect(s.networkMembers()).toEqual([]);
    expect(s.placedBytes()).toEqual([]);
    expect(s.givenList()).toBeNull();
    expect(s.notifications.waiting()).toEqual([]);
    expect(s.shape.flaggedIds('projects', 'hidden')).toEqual(new Set());
    expect(s.readThresholds()).toEqual({ rules: {}, overrides: [] });
    s.close();
  });

  it('pages through events of some types, oldest first, and reads the newest ones newest first', () => {
    const s = openCheckpoint(':memory:');
    for (let id = 1; id <= 4; id++) {
      s.appendEvent('move.failed', { kind: 'projects', source: 'nfs-1', id, moveId: id, error: null }, id);
      s.appendEvent('step.started', { step: 'drain' }, id);
    }
    const first = s.eventsOf(['move.failed'], 0, 2);
    expect(first.map((e) => e.data.id)).toEqual([1, 2]);
    expect(s.eventsOf(['move.failed'], first[1]!.seq, 10).map((e) => e.data.id)).toEqual([3, 4]);
    expect(s.eventsOf([], 0, 10)).toEqual([]);
    expect(s.lastEventsOf(['move.failed'], 2).map((e) => e.data.id)).toEqual([4, 3]);
    s.close();
  });
});

describe('the summary read under its own field names', () => {
  it('lists quarantined, stuck, orphaned and failed moves with their flags as booleans', () => {
    const s = openCheckpoint(':memory:');
    s.startRound('projects', 'nfs-1', 1);
    s.recordPage('projects', 'nfs-1', 1, [project(1, 10), project(2, 20), project(3, 30)], 0);
    s.finishRound('projects', 'nfs-1', 1);
    for (const id of [1, 2, 3]) s.markIntent('projects', id, 1, 'nfs-2');
    s.markInFlight('projects', 1, 11, 'started', 40);
    s.markMoved('projects', 1, 11, 'cleanup failed', 90, null);
    s.markInFlight('projects', 2, 12, 'started', 50);
    s.markQuarantined('projects', 2, 'stuck in started', { at: 60, readOnly: true });
    s.markInFlight('projects', 3, 13, 'scheduled', 55);
    s.markQuarantined('projects', 3, 'failed: boom', null);
    const sum = s.summary(100);
    expect(sum.quarantined).toEqual([
      { kind: 'projects', id: 2, source: 'nfs-1', name: 'p2', reason: 'stuck in started', attempts: 1 },
      { kind: 'projects', id: 3, source: 'nfs-1', name: 'p3', reason: 'failed: boom', attempts: 1 },
    ]);
    expect(sum.stuck).toEqual([
      { kind: 'projects', id: 2, moveId: 12, moveState: 'started', since: 50, readOnly: true },
    ]);
    expect(sum.orphans).toEqual([
      { kind: 'projects', id: 1, name: 'p1', source: 'nfs-1', moveId: 11, moveState: 'cleanup failed' },
    ]);
    expect(sum.failedMoves).toEqual([
      {
        kind: 'projects',
        id: 2,
        name: 'p2',
        source: 'nfs-1',
        destination: 'nfs-2',
        moveId: 12,
        moveState: 'started',
        stuck: true,
        state: 'quarantined',
        reason: 'stuck in started',
      },
      {
        kind: 'projects',
        id: 3,
        name: 'p3',
        source: 'nfs-1',
        destination: 'nfs-2',
        moveId: 13,
        moveState: 'scheduled',
        stuck: false,
        state: 'quarantined',
        reason: 'failed: boom',
      },
    ]);
    s.close();
  });
});

describe('schema introspection', () => {
  it('tells tables, indexes and columns apart, and prepares placeholders for what is missing', () => {
    const db = new Database(':memory:');
    migrate(db, ':memory:', SCHEMA_VERSION);
    expect(hasTable(db, 'items')).toBe(true);
    expect(hasTable(db, 'items_placed')).toBe(false);
    expect(hasIndex(db, 'items_placed')).toBe(true);
    expect(hasColumn(db, 'items', 'running_at')).toBe(true);
    expect(hasColumn(db, 'items', 'nothing')).toBe(false);
    expect(prepareIf(db, true)('SELECT COUNT(*) AS n FROM items').get()).toEqual({ n: 0 });
    expect(prepareIf(db, false)('SELECT * FROM no_such_table').all()).toEqual([]);
    expect(prepareIf(db, false, 'SELECT 0 AS n')('SELECT * FROM no_such_table').get()).toEqual({ n: 0 });
    db.close();
  });
});
