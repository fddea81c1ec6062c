import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { testPlan } from '../../test/support/fake-runtime-deps.js';
import { hashPlan } from '../plan/hash.js';
import { checkForwardPlan } from '../runtime/revert/revert-identity.js';
import { openCheckpoint } from '../store/checkpoint.js';
import { readAuditRow, storedNamesOf } from './legacy-names.js';

let dir = '';
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

/** A checkpoint whose log an older release wrote: `rows` inserted as they were, under their names then. */
function oldCheckpoint(rows: [type: string, data: object][]): string {
  dir = mkdtempSync(join(tmpdir(), 'sm-legacy-'));
  const file = join(dir, 'old.db');
  openCheckpoint(file).close();
  const db = new Database(file);
  const insert = db.prepare('INSERT INTO events (at, type, data) VALUES (?, ?, ?)');
  rows.forEach(([type, data], i) => insert.run(1_000 + i, type, JSON.stringify(data)));
  db.close();
  return file;
}

const previous = { pid: 1, host: 'old', startedAt: 0 };
const OLD_ROWS: [string, object][] = [
  ['step.entered', { step: 'drain nfs-1/projects' }],
  ['lock.takeover', { previous, reason: 'dead', heartbeatAgeMs: 5 }],
  ['plan.recorded', { hash: 'h', plan: { name: 'p' } }],
  ['item.quarantined', { kind: 'projects', source: 'nfs-1', id: 7, attempts: 2, reason: 'used up' }],
  ['window.closed', { cap: 0, ceiling: 4, reason: 'outside', window: 'Sat 22:00-06:00', nextOpenAt: 5_000 }],
  ['run.finished', { state: 'doneWithQuarantine', error: null, quarantined: 1 }],
];

describe("an older release's names in the checkpoint's log", () => {
  it("read as today's names and fields, and a retired type not at all", () => {
    const store = openCheckpoint(oldCheckpoint(OLD_ROWS), { readOnly: true });
    try {
      expect(store.readEvents().map((e) => [e.type, e.data])).toEqual([
        ['step.started', { step: 'drain nfs-1/projects' }],
        ['lock.taken_over', { previous, reason: 'dead', heartbeatAgeMs: 5 }],
        ['move.quarantined', { kind: 'projects', source: 'nfs-1', id: 7, attempts: 2, reason: 'used up' }],
        ['window.closed', { cap: 0, ceiling: 4, reason: 'outside', window: 'Sat 22:00-06:00', nextOpensAt: 5_000 }],
        ['run.finished', { outcome: 'doneWithQuarantine', error: null, quarantined: 1 }],
      ]);
      expect(store.lastEventOf(['run.finished'])?.data).toEqual({
        outcome: 'doneWithQuarantine',
        error: null,
        quarantined: 1,
      });
      expect(store.lastEventsOf(['move.quarantined', 'step.started'], 10).map((e) => e.type)).toEqual([
        'move.quarantined',
        'step.started',
      ]);
    } finally {
      store.close();
    }
  });

  it('keeps pages full past a retired type, so a reader that pages by size reads the whole log', () => {
    const rows: [string, object][] = [];
    for (let i = 0; i < 10; i++)
      rows.push(['plan.recorded', { hash: `h${i}`, plan: {} }], ['step.entered', { step: `s${i}` }]);
    const store = openCheckpoint(oldCheckpoint(rows), { readOnly: true });
    try {
      const page = store.readEvents(0, 4);
      expect(page.map((e) => e.type)).toEqual(['step.started', 'step.started', 'step.started', 'step.started']);
      const seen: string[] = [];
      for (let after = 0; ;) {
        const p = store.readEvents(after, 4);
        seen.push(...p.map((e) => (e.type === 'step.started' ? e.data.step : e.type)));
        if (p.length < 4) break;
        after = p.at(-1)!.seq;
      }
      expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => `s${i}`));
    } finally {
      store.close();
    }
  });

  it('leaves a row written under a name of today as it is, and asks the log for the old names too', () => {
    const row = { seq: 1, at: 2, type: 'window.closed', data: { cap: 0, ceiling: 1, reason: null, nextOpensAt: 3 } };
    expect(readAuditRow(row)).toEqual(row);
    expect(storedNamesOf(['move.quarantined', 'run.finished']).sort()).toEqual([
      'item.quarantined',
      'move.quarantined',
      'run.finished',
    ]);
  });

  it('cannot say which fields of the plan changed from an old plan.recorded event: the run row keeps the plan', () => {
    const plan = testPlan();
    const faster = testPlan({ move: { ...plan.move, concurrency: 9 } });
    const file = oldCheckpoint([['plan.recorded', { hash: hashPlan(plan), plan: { move: { concurrency: 4 } } }]]);
    const store = openCheckpoint(file);
    store.saveRun({ planName: 'p', planHash: hashPlan(plan), machineVersion: 1, snapshot: {}, plan: null });
    const saved = store.loadRun();
    store.close();
    expect(() =>
      checkForwardPlan({
        forwardFile: file,
        saved,
        plan: faster,
        hash: hashPlan(faster),
        accept: false,
        again: 'shardmove revert plan.yaml',
      }),
    ).toThrow(/did not record the plan, so which fields differ cannot be told/);
  });
});
