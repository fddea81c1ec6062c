// Move lifecycles under random sequences of schedules, commits and time (a commit accepted before
// or after a move is never lost by it). The sandbox runs on a manual clock, so a step of time is
// exact: the engine is woken after each advance.
//
// Steps include stopping and restarting the sandbox on its --db file.
//
// Invariants after every step: at most one move per item holds the read-only flag (scheduled or
// started), and an item is read-only exactly then, or after a lease conflict: a move scheduled
// during an earlier one's cleanup fails (`scheduled -> failed`, no error_message, never started)
// and leaves the flag set for good, as GitLab's worker does. A commit is accepted only while the
// item is writable; at the end, every accepted commit is still counted and every item's checksum
// matches its commits, wherever its moves took it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { NO_FAULTS, createFaults } from '../src/sandbox/faults.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { fakeChecksum } from '../src/sandbox/checksum.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { realTimersAt } from './support/fake-clock.js';
import { assertProperty } from './support/property.js';

const ROOT = { 'private-token': 'glpat-sandbox-root-api-sudo-0001', 'content-type': 'application/json' };
const MOVE_MS = 1000;
const KINDS = ['project', 'snippet', 'group'] as const;
type Kind = (typeof KINDS)[number];

/** A small inventory: three of each kind, all on nfs-1, every move exactly MOVE_MS long. */
function smallSeed(): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {
    generate: {
      random_seed: 7,
      projects: 3,
      snippets: 3,
      groups: 3,
      public_fraction: 0,
      hidden_fraction: 0,
      pending_delete_fraction: 0,
      storages: { 'nfs-1': 1 },
      size_mb: { median: 10, max: 10 },
    },
  };
  return s;
}

interface Manual {
  readonly sb: RunningSandbox;
  /** Moves the clock and lets the engine do what became due. */
  advance(ms: number): Promise<void>;
  /** Stops the sandbox and starts it again on the same database file (needs `db`). */
  restart(): Promise<void>;
}

async function startManual(faults: { moveFailRate: number; seed: number }, db?: string): Promise<Manual> {
  let now = Date.parse('2026-06-01T00:00:00Z');
  const start = () =>
    startSandbox({
      seed: smallSeed(),
      moveDurationMs: MOVE_MS,
      faults,
      clock: realTimersAt(() => now),
      ...(db ? { db } : {}),
    });
  let sb = await start();
  const settle = async () => {
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  return {
    get sb() {
      return sb;
    },
    async advance(ms) {
      now += ms;
      sb.state.engine.kick();
      await settle();
    },
    async restart() {
      await sb.close();
      sb = await start();
      await settle();
    },
  };
}

async function post(
  sb: RunningSandbox,
  path: string,
  body: unknown,
  method = 'POST',
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${sb.url}${path}`, { method, headers: ROOT, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** One write that makes a commit on an item of `kind`. */
function commit(sb: RunningSandbox, kind: Kind, id: number): Promise<{ status: number; body: unknown }> {
  if (kind === 'project') {
    return post(sb, `/api/v4/projects/${id}/repository/commits`, {
      branch: 'main',
      commit_message: 'c',
      actions: [{ action: 'create', file_path: 'f', content: 'x' }],
    });
  }
  if (kind === 'snippet') return post(sb, `/api/v4/snippets/${id}`, { content: `c${Math.random()}` }, 'PUT');
  return post(sb, `/api/v4/groups/${id}/wikis`, { title: `p${Math.random()}`, content: 'c' });
}

interface ItemState {
  read_only: number;
  commit_count: number;
  checksum: string;
  storage: string;
}

function item(sb: RunningSandbox, kind: Kind, id: number): ItemState {
  return sb.state.db
    .prepare('SELECT read_only, commit_count, checksum, storage FROM items WHERE kind = ? AND id = ?')
    .get(kind, id) as ItemState;
}

function checkInvariants(sb: RunningSandbox): void {
  const db = sb.state.db;
  const holders = db
    .prepare(
      `SELECT kind, item_id, count(*) n FROM moves WHERE state IN ('scheduled', 'started') GROUP BY kind, item_id`,
    )
    .all() as { kind: Kind; item_id: number; n: number }[];
  for (const h of holders) expect(h.n, `${h.kind} ${h.item_id} has ${h.n} moves holding it read-only`).toBe(1);
  const held = new Set(holders.map((h) => `${h.kind}:${h.item_id}`));
  const stranded = strandedItems(sb);
  for (const row of db.prepare('SELECT kind, id, read_only FROM items').all() as {
    kind: Kind;
    id: number;
    read_only: number;
  }[]) {
    const key = `${row.kind}:${row.id}`;
    expect(
      row.read_only === 1,
      `${row.kind} ${row.id} read_only=${row.read_only} while held=${held.has(key)} stranded=${stranded.has(key)}`,
    ).toBe(held.has(key) || stranded.has(key));
  }
}

/** Items a lease conflict left read-only: one of their moves failed before starting, without a message. */
function strandedItems(sb: RunningSandbox): Set<string> {
  const rows = sb.state.db
    .prepare(
      "SELECT DISTINCT kind, item_id FROM moves WHERE state = 'failed' AND error_message IS NULL AND snapshot_checksum IS NULL",
    )
    .all() as { kind: Kind; item_id: number }[];
  return new Set(rows.map((r) => `${r.kind}:${r.item_id}`));
}

describe('move lifecycles', () => {
  // Regression: a move that failed its cleanup cleared the read-only flag that a newer move of the
  // same item (scheduled once the first was replicated) held; a commit accepted then was lost when
  // the newer move replicated its snapshot. The newer move now fails on the lease, as in GitLab,
  // and the flag it set stays: still no commit can land, and none is lost.
  it("a cleanup failure does not make a newer move's item writable, and no commit is lost", async () => {
    let seed = 1;
    while (!(
      createFaults(
        { ...NO_FAULTS, moveFailRate: 0.5, seed },
        realTimersAt(() => 0),
      ).moveFate('project', 1, 1) === 'cleanup_fail' &&
      createFaults(
        { ...NO_FAULTS, moveFailRate: 0.5, seed },
        realTimersAt(() => 0),
      ).moveFate('project', 1, 2) === 'ok'
    ))
      seed++;
    const m = await startManual({ moveFailRate: 0.5, seed });
    const { sb } = m;
    const advance = (ms: number) => m.advance(ms);
    try {
      expect(
        (await post(sb, '/api/v4/projects/1/repository_storage_moves', { destination_storage_name: 'cluster' })).status,
      ).toBe(201);
      await advance(0);
      await advance(MOVE_MS * 0.95);
      expect(item(sb, 'project', 1)).toMatchObject({ storage: 'cluster', read_only: 0 });
      expect(
        (await post(sb, '/api/v4/projects/1/repository_storage_moves', { destination_storage_name: 'nfs-2' })).status,
      ).toBe(201);
      await advance(0);
      await advance(MOVE_MS * 0.1);
      const moves = sb.state.db.prepare('SELECT state, error_message FROM moves ORDER BY id').all();
      expect(moves).toEqual([
        { state: 'cleanup failed', error_message: expect.stringContaining('Failed to remove') },
        { state: 'failed', error_message: null },
      ]);
      checkInvariants(sb);
      const before = item(sb, 'project', 1).commit_count;
      const during = await commit(sb, 'project', 1);
      expect(during.status, JSON.stringify(during.body)).toBe(400);
      await advance(MOVE_MS * 2);
      expect(item(sb, 'project', 1)).toMatchObject({ storage: 'cluster', read_only: 1, commit_count: before });
      expect((await commit(sb, 'project', 1)).status).toBe(400);
      expect(
        (await post(sb, '/api/v4/projects/1/repository_storage_moves', { destination_storage_name: 'nfs-2' })).body,
      ).toEqual({ message: { project: ['is read-only'] } });
      expect(item(sb, 'project', 1).commit_count).toBe(before);
    } finally {
      await sb.close();
    }
  });
});

type Action =
  | { t: 'schedule'; kind: Kind; id: number; dest?: string }
  | { t: 'bulk'; kind: Kind; source: string; dest?: string }
  | { t: 'commit'; kind: Kind; id: number }
  | { t: 'wait'; ms: number }
  | { t: 'restart' };

const storage = fc.constantFrom('nfs-1', 'nfs-2', 'cluster', 'default');
const kind = fc.constantFrom(...KINDS);
const itemId = fc.integer({ min: 1, max: 3 });
const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record(
      { t: fc.constant('schedule' as const), kind, id: itemId, dest: fc.option(storage, { nil: undefined }) },
      { requiredKeys: ['t', 'kind', 'id'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record(
      { t: fc.constant('bulk' as const), kind, source: storage, dest: fc.option(storage, { nil: undefined }) },
      { requiredKeys: ['t', 'kind', 'source'] },
    ),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('commit' as const), kind, id: itemId }) },
  // Steps around the copy (90% of a move) and cleanup (10%) boundaries.
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('wait' as const),
      ms: fc.constantFrom(0, 50, 100, 450, 899, 900, 950, 1000, 2000),
    }),
  },
  // A stop and start on the same --db file: running moves must go on where they were.
  { weight: 1, arbitrary: fc.constant({ t: 'restart' as const }) },
);
/** Plain actions, and the sequence that overlaps two moves of one item: a new move scheduled during the old one's cleanup. */
const step: fc.Arbitrary<Action[]> = fc.oneof(
  { weight: 4, arbitrary: action.map((a) => [a]) },
  {
    weight: 1,
    arbitrary: fc.tuple(kind, itemId, storage).map(([k, id, dest]): Action[] => [
      { t: 'schedule', kind: k, id, dest: dest === 'cluster' ? 'nfs-2' : 'cluster' },
      { t: 'wait', ms: 950 },
      { t: 'schedule', kind: k, id, dest },
      { t: 'wait', ms: 100 },
      { t: 'commit', kind: k, id },
    ]),
  },
);

/**
 * Fault seeds under which, with every move failing, at least three items' first move fails in its
 * cleanup (a tenth of failures do): overlapping moves then meet the cleanup path often enough.
 */
function cleanupHeavySeeds(count: number): number[] {
  const out: number[] = [];
  for (let seed = 1; out.length < count; seed++) {
    const faults = createFaults(
      { ...NO_FAULTS, moveFailRate: 1, seed },
      realTimersAt(() => 0),
    );
    let n = 0;
    for (const k of KINDS) for (let id = 1; id <= 3; id++) if (faults.moveFate(k, id, 1) === 'cleanup_fail') n++;
    if (n >= 3) out.push(seed);
  }
  return out;
}

const faultPlan = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.record({ moveFailRate: fc.constantFrom(0, 0.3, 1), seed: fc.integer({ min: 1, max: 1_000_000 }) }),
  },
  { weight: 2, arbitrary: fc.record({ moveFailRate: fc.constant(1), seed: fc.constantFrom(...cleanupHeavySeeds(8)) }) },
);

describe('property: move lifecycles never lose a commit', () => {
  it('random schedules, bulk moves, commits and time, with failing moves', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 8 }).map((steps) => steps.flat()),
        faultPlan,
        async (actions, { moveFailRate, seed }) => {
          const dir = mkdtempSync(join(tmpdir(), 'sm-lifecycle-'));
          const m = await startManual({ moveFailRate, seed }, join(dir, 'sandbox.db'));
          try {
            const accepted = new Map<string, number>();
            const initial = new Map<string, number>();
            for (const k of KINDS)
              for (let id = 1; id <= 3; id++) initial.set(`${k}:${id}`, item(m.sb, k, id).commit_count);
            for (const a of actions) {
              if (a.t === 'wait') await m.advance(a.ms);
              else if (a.t === 'restart') await m.restart();
              else if (a.t === 'bulk') {
                const body =
                  a.dest === undefined
                    ? { source_storage_name: a.source }
                    : { source_storage_name: a.source, destination_storage_name: a.dest };
                expect((await post(m.sb, `/api/v4/${a.kind}_repository_storage_moves`, body)).status).toBe(202);
                await m.advance(0);
              } else if (a.t === 'schedule') {
                const wasReadOnly = item(m.sb, a.kind, a.id).read_only === 1;
                const res = await post(
                  m.sb,
                  `/api/v4/${a.kind}s/${a.id}/repository_storage_moves`,
                  a.dest === undefined ? {} : { destination_storage_name: a.dest },
                );
                expect(res.status, JSON.stringify(res.body)).toBe(wasReadOnly ? 400 : 201);
                await m.advance(0);
              } else {
                const res = await commit(m.sb, a.kind, a.id);
                const readOnly = item(m.sb, a.kind, a.id).read_only === 1;
                expect(res.status, JSON.stringify(res.body)).toBe(readOnly ? 400 : a.kind === 'snippet' ? 200 : 201);
                if (!readOnly) accepted.set(`${a.kind}:${a.id}`, (accepted.get(`${a.kind}:${a.id}`) ?? 0) + 1);
              }
              checkInvariants(m.sb);
            }
            // Let every move end (none is stuck here), then count.
            for (
              let i = 0;
              i < 40 &&
              (
                m.sb.state.db
                  .prepare("SELECT count(*) n FROM moves WHERE state IN ('scheduled', 'started', 'replicated')")
                  .get() as { n: number }
              ).n > 0;
              i++
            ) {
              await m.advance(MOVE_MS);
            }
            expect(
              m.sb.state.db
                .prepare("SELECT id, state FROM moves WHERE state NOT IN ('finished', 'failed', 'cleanup failed')")
                .all(),
            ).toEqual([]);
            for (const k of KINDS) {
              for (let id = 1; id <= 3; id++) {
                const now = item(m.sb, k, id);
                const want = (initial.get(`${k}:${id}`) as number) + (accepted.get(`${k}:${id}`) ?? 0);
                expect(now.commit_count, `${k} ${id}: commits`).toBe(want);
                expect(now.checksum, `${k} ${id}: checksum`).toBe(fakeChecksum(k, id, want));
                const stranded = strandedItems(m.sb).has(`${k}:${id}`);
                expect(
                  now.read_only,
                  `${k} ${id}: read-only after all moves ended (stranded by a lease conflict: ${stranded})`,
                ).toBe(stranded ? 1 : 0);
              }
            }
          } finally {
            await m.sb.close();
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 50 },
    );
  }, 90_000);
});
