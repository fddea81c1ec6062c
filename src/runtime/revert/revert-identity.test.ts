import { describe, expect, it } from 'vitest';
import { testPlan } from '../../../test/support/fake-runtime-deps.js';
import { ApiHttpError } from '../../api/errors.js';
import type { InstanceApi, MoveRecord } from '../../api/types.js';
import { canonicalJson, hashPlan, planHashInput } from '../../plan/hash.js';
import { diffPlanRecords } from '../../plan/plan-diff.js';
import type { Plan } from '../../plan/types.js';
import { openCheckpoint } from '../../store/checkpoint.js';
import {
  assertRecorded,
  checkForwardPlan,
  checkRevertPlan,
  recordedUrlOf,
  revertHash,
  unrecordedSample,
} from './revert-identity.js';
import type { RevertItem } from '../../actors/index.js';

/** The plan's fields as the run row keeps them (schema 17). */
const record = (p: Plan) => canonicalJson(planHashInput(p));
/** A saved run under `planHash`, keeping the fields of `p` (none: written before schema 17). */
const saved = (planHash: string, p: Plan | null = null) => ({
  planName: 'p',
  planHash,
  machineVersion: 1,
  snapshot: {},
  plan: p ? record(p) : null,
});
const plan = testPlan();
const moved = testPlan({ instance: { ...plan.instance, url: 'http://127.0.0.1:2' } });
const faster = testPlan({ move: { ...plan.move, concurrency: 9 } });

function check(over: Partial<Parameters<typeof checkForwardPlan>[0]>): void {
  checkForwardPlan({
    forwardFile: 'state/it.db',
    saved: saved(hashPlan(plan), plan),
    plan,
    hash: hashPlan(plan),
    accept: false,
    again: 'shardmove revert plan.yaml',
    ...over,
  });
}

describe("a revert under its forward run's plan", () => {
  it('goes on under the same plan; refuses another, naming the URL as recorded and now, and the fields', () => {
    expect(() => check({})).not.toThrow();
    expect(() => check({ plan: moved, hash: hashPlan(moved) })).toThrow(
      'the instance URL: http://127.0.0.1:1 as recorded by the forward run, http://127.0.0.1:2 now',
    );
    expect(() => check({ plan: faster, hash: hashPlan(faster) })).toThrow(/move\.concurrency: 4 -> 9\)/);
    expect(() => check({ plan: faster, hash: hashPlan(faster) })).toThrow(
      /If the change is intended: shardmove revert plan\.yaml --accept-plan-change/,
    );
    expect(() => check({ plan: faster, hash: hashPlan(faster), accept: true })).not.toThrow();
  });

  it('says so when the forward checkpoint predates recorded plans', () => {
    expect(() => check({ plan: faster, hash: hashPlan(faster), saved: saved('old') })).toThrow(
      /did not record the plan, so which fields differ cannot be told/,
    );
  });

  it("keeps to the plan the revert's own checkpoint runs under once it accepted one", () => {
    const revert = (p: Plan) =>
      checkRevertPlan({
        saved: saved(revertHash(hashPlan(faster)), faster),
        plan: p,
        hash: hashPlan(p),
        accept: false,
        again: 'shardmove revert plan.yaml',
      });
    expect(() => revert(faster)).not.toThrow();
    // Back to the forward plan: that is a change for the revert under way.
    expect(() => revert(plan)).toThrow(/differs from the one this revert started under \(move\.concurrency: 9 -> 4\)/);
  });

  it("reads the plan from the run row, without credentials, and tells the fields apart as run's refusal does", () => {
    const s = openCheckpoint(':memory:');
    s.saveRun(saved(hashPlan(plan), plan));
    expect(s.loadRun()?.plan).toBe(record(plan));
    expect(JSON.stringify(s.loadRun())).not.toContain('glpat-');
    expect(recordedUrlOf(s.loadRun())).toBe('http://127.0.0.1:1');
    expect(recordedUrlOf(saved('old'))).toBeNull();
    expect(diffPlanRecords(record(plan), record(moved))).toEqual([
      { path: 'instance.url', from: 'http://127.0.0.1:1', to: 'http://127.0.0.1:2' },
    ]);
  });
});

const item = (id: number): RevertItem => ({
  kind: 'projects',
  id,
  name: `p${id}`,
  sizeBytes: 1,
  from: 'cluster',
  to: 'nfs-1',
  forwardMoveId: 100 + id,
  forwardState: 'moved',
});

const move = (id: number, itemId: number): MoveRecord => ({
  id,
  kind: 'projects',
  itemId,
  state: 'finished',
  sourceStorage: 'nfs-1',
  destinationStorage: 'cluster',
  errorMessage: null,
  createdAt: '2026-01-01T00:00:00Z',
});

describe("the instance of a revert that resumes holds the forward run's moves", () => {
  it('checks a few spread over the items: another item behind the move id, or none, is unrecorded; a deleted item proves nothing', async () => {
    const asked: number[] = [];
    const api = {
      getMove: async (_k: string, id: number) => {
        asked.push(id);
        if (id === 101) return move(101, 1);
        if (id === 150) return move(150, 77);
        return null;
      },
      listItemMoves: async (_k: string, id: number) => {
        if (id === 17) throw new ApiHttpError({ method: 'GET', path: '/x' }, 404, '404 Project Not Found', null);
        return [];
      },
    } as unknown as InstanceApi;
    const items = [item(1), ...Array.from({ length: 48 }, (_, i) => item(i + 2)), item(50)];
    const r = await unrecordedSample(api, items, 4);
    expect(r.checked).toBe(4);
    expect(asked).toEqual([101, 117, 134, 150]);
    // 117: no such move, and the item is gone (proves nothing); 134: no such move though the item is
    // there; 150: the move is another item's.
    expect(r.unrecorded.map((i) => i.id)).toEqual([34, 50]);
    expect(() =>
      assertRecorded(r.unrecorded, {
        url: 'http://b',
        recordedUrl: 'http://a',
        forwardFile: 'state/it.db',
        checked: r.checked,
      }),
    ).toThrow(
      /http:\/\/b is not the instance the forward run in state\/it\.db moved items on \(the forward run worked on http:\/\/a, as recorded\): of 4 item\(s\) checked, 2 exist here/,
    );
    expect(() =>
      assertRecorded([], { url: 'http://b', recordedUrl: null, forwardFile: 'f', checked: 4 }),
    ).not.toThrow();
  });
});
