import { describe, expect, it } from 'vitest';
import { buildStatusReport } from '../status.js';
import type { CapData } from '../../events/vocabulary.js';
import type { StoredEvent, StatusSummary } from '../../store/types.js';
import { auditEvent } from '../../../test/support/audit-event.js';
import { buildReportData, niceStep } from './data.js';
import { escapeHtml, renderHtmlReport } from './render.js';

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const ev: typeof auditEvent = (s, type, data) => auditEvent(T0 + s * 1000, type, data);
const PLAN_CAP: CapData = { cap: 10, ceiling: 10, paused: false, limit: 'plan', reason: "the plan's move.concurrency" };
const CONTROL_CAP: CapData = {
  cap: 1,
  ceiling: 1,
  paused: false,
  limit: 'control',
  reason: 'set with shardmove control',
};
const PAUSED_CAP: CapData = {
  cap: 0,
  ceiling: 0,
  paused: true,
  limit: 'paused',
  reason: 'paused with shardmove control',
};

const summary: StatusSummary = {
  counts: [
    { kind: 'projects', source: 'nfs-1', state: 'moved', n: 3 },
    { kind: 'projects', source: 'nfs-1', state: 'quarantined', n: 1 },
    { kind: 'snippets', source: 'nfs-2', state: 'moved', n: 1 },
  ],
  quarantined: [
    {
      kind: 'projects',
      id: 4,
      source: 'nfs-1',
      name: 'g/<script>',
      reason: 'Failed to verify <checksum>',
      attempts: 2,
    },
  ],
  movedLast10Min: 4,
  total: 5,
  stuck: [],
  orphans: [{ kind: 'projects', id: 1, name: 'g/p1', source: 'nfs-1', moveId: 1, moveState: 'cleanup failed' }],
};

/** Three project moves (one failed then retried), one snippet move, a cap change and a pause. */
function events(): StoredEvent[] {
  const p = (id: number, moveId: number) => ({ kind: 'projects', source: 'nfs-1', id, moveId }) as const;
  return [
    ev(0, 'run.started', { resumed: false, dryRun: false, pid: 1 }),
    ev(0, 'step.started', { step: 'drain nfs-1/projects' }),
    ev(0, 'drain.started', { kind: 'projects', source: 'nfs-1', mode: 'throttled' }),
    ev(0, 'cap.changed', { ...PLAN_CAP, previous: null }),
    ev(1, 'move.scheduled', { ...p(1, 1), moveState: 'scheduled' }),
    ev(1, 'move.scheduled', { ...p(2, 2), moveState: 'scheduled' }),
    ev(2, 'move.scheduled', { ...p(4, 3), moveState: 'scheduled' }),
    ev(3, 'control.changed', { concurrency: 1, paused: false, previous: { concurrency: null, paused: false } }),
    ev(3, 'cap.changed', { ...CONTROL_CAP, previous: PLAN_CAP }),
    ev(11, 'move.finished', p(1, 1)),
    ev(21, 'move.failed', { ...p(2, 2), error: 'boom' }),
    ev(22, 'item.retry', {
      kind: 'projects',
      source: 'nfs-1',
      id: 2,
      attempts: 1,
      nextAttemptAt: T0 + 40_000,
      reason: 'boom',
    }),
    ev(30, 'control.changed', { concurrency: 1, paused: true, previous: { concurrency: 1, paused: false } }),
    ev(30, 'cap.changed', { ...PAUSED_CAP, previous: CONTROL_CAP }),
    ev(40, 'control.changed', { concurrency: null, paused: false, previous: { concurrency: 1, paused: true } }),
    ev(40, 'cap.changed', { ...PLAN_CAP, previous: PAUSED_CAP }),
    ev(41, 'move.scheduled', { ...p(2, 4), moveState: 'scheduled' }),
    ev(51, 'move.finished', p(2, 4)),
    ev(52, 'move.failed', { ...p(4, 3), error: 'Failed to verify <checksum>' }),
    ev(54, 'drain.started', { kind: 'snippets', source: 'nfs-2', mode: 'bulk' }),
    ev(55, 'bulk.move_seen', { kind: 'snippets', source: 'nfs-2', id: 9, moveId: 1, moveState: 'started' }),
    ev(60, 'move.finished', { kind: 'snippets', source: 'nfs-2', id: 9, moveId: 1 }),
    ev(60, 'run.finished', { outcome: 'doneWithQuarantine', error: null, quarantined: 1 }),
  ];
}

function build() {
  const snapshot = {
    status: 'done',
    value: 'doneWithQuarantine',
    context: {
      startedAt: T0,
      step: 'done',
      dryRun: false,
      verify: true,
      geoResync: false,
      verification: { ok: true, problems: [], perKindAndSource: null },
      geo: null,
      previousWeights: { 'nfs-1': 100 },
      newWeights: { 'nfs-1': 0, cluster: 100 },
      weightsWritten: true,
      warnings: [],
      error: null,
      instanceVersion: '17.11.0',
    },
  };
  const status = buildStatusReport(
    '/x/it.db',
    { planName: 'it', planHash: 'h', machineVersion: 1, snapshot },
    summary,
    T0 + 3_600_000,
    { lock: null, planConcurrency: 10 },
  );
  return buildReportData({ status, context: snapshot.context as never, events: events(), now: T0 + 3_600_000 });
}

describe('buildReportData', () => {
  it('says how much of the run had idle slots while items were due, and which drains are not pipelined', () => {
    const d = build();
    // Item 2's retry was due at 40 s and started at 41 s, with 2 of 10 slots held: one idle second.
    expect(d.timeline.idle.idleSeconds).toBe(1);
    expect(d.timeline.idle.share).toBeCloseTo(1 / 60);
    expect(d.timeline.idle.unpipelined).toEqual(['nfs-2/snippets (bulk)']);
    const html = renderHtmlReport(d);
    expect(html).toContain('Idle slots: 1.7% of the run (1 s)');
    expect(html).toContain(
      'Not pipelined, so the slots empty between each of these drains and the next by design: nfs-2/snippets (bulk)',
    );
  });

  it('samples moves in flight at each bucket end, and the cap and pause in force then', () => {
    const d = build();
    expect(d.timeline.bucketSeconds).toBe(0.5);
    const at = (s: number) => d.timeline.points.find((p) => p.t === s)!;
    expect(at(1).inFlight).toBe(2);
    expect(at(2).inFlight).toBe(3);
    expect(at(2).cap).toBe(10);
    expect(at(3).cap).toBe(1);
    expect(at(11).inFlight).toBe(2);
    // Paused: the cap in force is 0, as status, the metrics and --events say.
    expect(at(35)).toMatchObject({ inFlight: 1, paused: true, cap: 0 });
    expect(at(45)).toMatchObject({ inFlight: 2, paused: false, cap: 10 });
    expect(at(60).inFlight).toBe(0);
    // Throughput over the last four buckets (2 s here): one finish is 30 a minute for 2 s.
    expect([10.5, 11, 12.5, 13].map((s) => at(s).finishedPerMin)).toEqual([0, 30, 30, 0]);
    expect(at(21).failedPerMin).toBe(30);
  });

  it('marks pauses, cap changes, restarts and steps, and counts moves, retries and durations per kind', () => {
    const d = build();
    expect(d.timeline.markers.map((m) => `${m.t}:${m.label}`)).toEqual([
      '0:run started',
      '0:drain nfs-1/projects',
      '3:cap 1',
      '30:paused',
      '40:unpaused',
      "40:cap back to the plan's",
      '60:finished: doneWithQuarantine',
    ]);
    const projects = d.kinds.find((k) => k.kind === 'projects')!;
    expect(projects).toMatchObject({
      total: 4,
      moved: 3,
      quarantined: 1,
      movesFinished: 2,
      movesFailed: 2,
      retries: 1,
      medianSeconds: 10,
      maxSeconds: 10,
    });
    // Durations 10 (finished), 20 and 50 (failed), 10 (finished): 5-second bins up to 50.
    expect(d.durations.binSeconds).toBe(5);
    expect(d.durations.byKind.projects?.reduce((a, n) => a + n, 0)).toBe(4);
    expect(d.durations.byKind.projects?.[2]).toBe(2);
    expect(d.durations.byKind.snippets?.[1]).toBe(1);
    expect(d.storages.map((s) => [s.storage, s.total, s.quarantined])).toEqual([
      ['nfs-1', 4, 1],
      ['nfs-2', 1, 0],
    ]);
    expect(d.outcome.averagePerMinute).toBe(3);
  });

  it('renders escaped text and refers to nothing outside the file', () => {
    const html = renderHtmlReport(build());
    expect(html).toContain('g/&#60;script&#62;');
    expect(html).toContain('Failed to verify &#60;checksum&#62;');
    expect(html).not.toMatch(/<(?:script|link|img|iframe)[^>]+(?:src|href)=/i);
    expect(html).toContain("default-src 'none'");
    // The data's own "<" cannot close its script element.
    expect(html.split('<script type="application/json"')[1]!.split('</script>')[0]).not.toContain('<');
    expect(escapeHtml(`a&"'`)).toBe('a&#38;&#34;&#39;');
  });

  it('lists the source copies left behind with their hashed paths, and names weights restore for the way back', () => {
    const html = renderHtmlReport(build());
    expect(html).toContain('Source copies left behind (1)');
    expect(html).toContain('@hashed/6b/86/6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b.git');
    expect(html).toContain('shardmove weights restore PLAN --state /x/it.db');
    expect(html).toContain('shardmove revert PLAN --state /x/it.db');
    expect(html).not.toContain('PUT <code>');
  });

  it('says a revert is one, and offers no revert of it', () => {
    const snapshot = {
      status: 'done',
      value: 'done',
      context: {
        startedAt: T0,
        step: 'done',
        dryRun: false,
        verify: true,
        geoResync: false,
        verification: null,
        geo: null,
        previousWeights: { cluster: 100 },
        newWeights: { 'nfs-1': 100, cluster: 0 },
        weightsWritten: true,
        warnings: [],
        error: null,
        instanceVersion: '17.11.0',
      },
    };
    const status = buildStatusReport(
      '/x/it.revert.db',
      { planName: 'it', planHash: 'h', machineVersion: 1, snapshot },
      { ...summary, quarantined: [], orphans: [] },
      T0 + 60_000,
      { lock: null, planConcurrency: 10 },
    );
    const data = buildReportData({
      status,
      context: snapshot.context as never,
      events: [ev(0, 'revert.seeded', { forward: '/x/it.db', items: 4, skipped: 0 }), ...events().slice(0, -1)],
      now: T0 + 60_000,
    });
    expect(data.revertOf).toBe('/x/it.db');
    expect(data.outcome.headline).toContain('Reverted');
    const html = renderHtmlReport(data);
    expect(html).toContain('shardmove weights restore PLAN --state /x/it.revert.db');
    expect(html).not.toContain('shardmove revert PLAN');
  });
});

describe('niceStep', () => {
  it('rounds up to 1, 2 or 5 times a power of ten', () => {
    expect([0, 0.3, 0.07, 1, 1.1, 3, 7, 42, 500].map(niceStep)).toEqual([1, 0.5, 0.1, 1, 2, 5, 10, 50, 500]);
  });
});
