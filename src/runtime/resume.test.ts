import { describe, expect, it } from 'vitest';
import { MACHINE_VERSION } from '../machine/machine.js';
import { openCheckpoint } from '../store/checkpoint.js';
import type { SavedRun } from '../store/types.js';
import { chooseStart, describeResume, planFixed, startedOver } from './resume.js';
import type { StartOptions } from './resume.js';

const saved = (step: string, value: string = step, extra: Record<string, unknown> = {}): SavedRun => ({
  planName: 'x',
  planHash: 'old',
  machineVersion: MACHINE_VERSION,
  snapshot: { status: value === 'failed' ? 'done' : 'active', value, context: { step, startedAt: 0, ...extra } },
});

const opts = (o: Partial<StartOptions> = {}): StartOptions => ({
  acceptPlanChange: false,
  dryRun: false,
  fixed: () => true,
  planChanges: () => ['move.concurrency: 4 -> 8', 'retry.max_attempts: 3 -> 5'],
  ...o,
});

describe('chooseStart: a changed plan', () => {
  it('is refused once the run fixed its plan, naming every changed field on a line of its own', () => {
    expect(() => chooseStart(saved('drain'), 'new', opts())).toThrow(
      'refusing to resume: the plan changed since the checkpoint was written:\n' +
        '  move.concurrency: 4 -> 8\n  retry.max_attempts: 3 -> 5\n' +
        'Run again with --accept-plan-change to resume with this plan, or use a new --state file',
    );
  });

  it('says when the checkpoint cannot tell which fields (written before it kept its plan)', () => {
    expect(() => chooseStart(saved('drain'), 'new', opts({ planChanges: () => null }))).toThrow(
      /which fields, this checkpoint cannot tell: an older shardmove wrote it\)\. Run again with --accept-plan-change/,
    );
  });

  it("is the next attempt's plan while nothing fixed it (a pre-flight that refused): a fresh start that says so", () => {
    const start = chooseStart(saved('preflight', 'failed'), 'new', opts({ fixed: () => false }));
    expect(start).toMatchObject({ kind: 'fresh', snapshot: undefined });
    expect(start.note).toBe(
      'the plan changed since the checkpoint was written (move.concurrency: 4 -> 8; retry.max_attempts: 3 -> 5), ' +
        'but the last attempt wrote nothing to the instance and recorded no item: this run starts with this plan',
    );
  });

  it('is accepted with --accept-plan-change, the reason naming the fields', () => {
    const start = chooseStart(saved('drain'), 'new', opts({ acceptPlanChange: true }));
    expect(start.reason).toBe(
      'accepted: the plan changed since the checkpoint was written (move.concurrency: 4 -> 8; retry.max_attempts: 3 -> 5)',
    );
    expect(start.note).toBeUndefined();
  });

  it('asks nothing of the checkpoint when the plan is the same', () => {
    const never = () => {
      throw new Error('not asked');
    };
    const same = { ...saved('drain'), planHash: 'new' };
    expect(chooseStart(same, 'new', opts({ fixed: never, planChanges: never })).kind).toBe('restore');
  });
});

describe('planFixed: what fixes a checkpoint to its plan', () => {
  const store = (items: boolean, mutating: boolean) => {
    const s = openCheckpoint(':memory:');
    if (items)
      s.recordPage('projects', 'nfs-1', 1, [{ kind: 'projects', id: 1, storage: 'nfs-1', name: 'p', sizeBytes: 1 }], 0);
    if (mutating)
      s.appendEvent(
        'http.mutating',
        { method: 'PUT', path: '/api/v4/application/settings', attempt: 1, mutating: true },
        1,
      );
    return s;
  };
  it.each([
    ['a pre-flight that refused', saved('preflight', 'failed'), false, false, false, false],
    ['a storage check that failed', saved('storages', 'failed'), false, false, false, false],
    ['a run that entered its weights step (it writes first)', saved('weights'), false, false, false, true],
    ['a dry run in its weights step (it writes nothing)', saved('weights'), true, false, false, false],
    ['a dry run that listed an item', saved('drain'), true, true, false, true],
    ['a write in the audit trail', saved('preflight', 'failed'), false, false, true, true],
    ['written weights', saved('preflight', 'failed', { weightsWritten: true }), false, false, false, true],
  ])('%s', (_what, run, dryRun, items, mutating, fixed) => {
    const s = store(items, mutating);
    try {
      expect(planFixed(s, run, { dryRun, now: 2 })).toBe(fixed);
    } finally {
      s.close();
    }
  });
});

describe('describeResume: the line a resume prints', () => {
  const counts = (c: Record<string, number>) => ({
    counts: Object.entries(c).map(([state, n]) => ({ kind: 'projects' as const, source: 'nfs-1', state, n })),
  });
  const base = {
    saved: saved('drain'),
    start: { kind: 'restore' as const, snapshot: undefined, previousWeights: null },
    mode: 'run' as const,
    file: '/srv/plans/state/x.db',
    now: 2 * 3600_000 + 14 * 60_000,
  };

  it('says when the run started, how far it got, and where its checkpoint is', () => {
    expect(
      describeResume({ ...base, summary: counts({ moved: 120, pending: 230, in_flight: 4, quarantined: 6 }) }),
    ).toBe(
      'resuming the run started 1970-01-01T00:00:00Z (2h14m ago): 120 of 360 item(s) moved, 4 in flight, 6 quarantined (checkpoint /srv/plans/state/x.db)',
    );
    expect(describeResume({ ...base, mode: 'revert', summary: counts({ moved: 3, pending: 1 }) })).toMatch(
      /^resuming the revert started .*: 3 of 4 item\(s\) moved back \(/,
    );
    expect(describeResume({ ...base, mode: 'dry-run', summary: counts({ pending: 7 }) })).toMatch(
      /^resuming the dry run started .*: 7 item\(s\) listed \(/,
    );
    expect(describeResume({ ...base, summary: counts({}) })).toMatch(/: no item listed yet \(/);
  });

  it('says when a finished run is only replayed, and when a finished dry run is repeated', () => {
    const done = { ...saved('done'), snapshot: { status: 'done', value: 'done', context: { startedAt: 0 } } };
    expect(describeResume({ ...base, saved: done, summary: counts({ moved: 3 }) })).toMatch(
      /^the run started 1970-01-01T00:00:00Z \(2h14m ago\) has ended: 3 of 3 item\(s\) moved \(/,
    );
    const fresh = { kind: 'fresh' as const, snapshot: undefined, previousWeights: null };
    expect(
      describeResume({ ...base, saved: done, start: fresh, mode: 'dry-run', summary: counts({ pending: 3 }) }),
    ).toMatch(/^repeating the dry run started .*: 3 item\(s\) listed \(/);
  });

  it('says nothing for a first start, or a fresh start that carries nothing on', () => {
    expect(describeResume({ ...base, saved: null, summary: counts({}) })).toBeUndefined();
    const fresh = { kind: 'fresh' as const, snapshot: undefined, previousWeights: null };
    expect(describeResume({ ...base, start: fresh, summary: counts({}) })).toBeUndefined();
    expect(describeResume({ ...base, start: fresh, summary: counts({ moved: 1 }) })).toMatch(/^resuming the run/);
  });
});

describe('startedOver: a revert that took new items', () => {
  it('turns a restore into a start from pre-flight with the reason, and leaves every other start alone', () => {
    const restore = { kind: 'restore' as const, snapshot: { status: 'done' } as never, previousWeights: { a: 1 } };
    expect(startedOver(restore, undefined)).toBe(restore);
    expect(startedOver(restore, '2 more item(s) taken')).toEqual({
      kind: 'fresh',
      snapshot: undefined,
      previousWeights: { a: 1 },
      reason: '2 more item(s) taken',
      resumes: true,
    });
    const fresh = {
      kind: 'fresh' as const,
      snapshot: undefined,
      previousWeights: null,
      reason: 'resuming a failed run',
    };
    expect(startedOver(fresh, 'x')).toBe(fresh);
  });
});
