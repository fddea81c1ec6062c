import { describe, expect, it } from 'vitest';
import type { RunContext } from '../machine/types.js';
import type { StatusSummary } from '../store/types.js';
import { estimateDuration } from './estimate.js';
import { renderFinalReport } from './final.js';
import { buildStatusReport, renderStatus } from './status.js';
import { formatApproxDuration, progressByKind } from './summary.js';

const summary: StatusSummary = {
  counts: [
    { kind: 'projects', source: 'nfs-1', state: 'moved', n: 80 },
    { kind: 'projects', source: 'nfs-1', state: 'left', n: 2 },
    { kind: 'projects', source: 'nfs-1', state: 'in_flight', n: 8 },
    { kind: 'projects', source: 'nfs-1', state: 'scheduling', n: 2 },
    { kind: 'projects', source: 'nfs-2', state: 'pending', n: 7 },
    { kind: 'projects', source: 'nfs-2', state: 'quarantined', n: 1 },
    { kind: 'snippets', source: 'nfs-1', state: 'moved', n: 5 },
  ],
  quarantined: [{ kind: 'projects', id: 3, source: 'nfs-2', name: 'g/p3', reason: 'checksum mismatch', attempts: 3 }],
  movedLast10Min: 50,
  total: 105,
  stuck: [],
  retrying: [{ kind: 'projects', source: 'nfs-2', n: 3 }],
};

const context: RunContext = {
  sources: ['nfs-1', 'nfs-2'],
  destination: 'cluster',
  kinds: ['projects', 'snippets'],
  verify: true,
  geoResync: false,
  dryRun: false,
  step: 'done',
  startedAt: 0,
  tokenExpiresAt: null,
  sourceIndex: 1,
  kindIndex: 1,
  previousWeights: { default: 100 },
  newWeights: { default: 0, cluster: 100 },
  weightsWritten: true,
  instanceVersion: '17.11.0',
  warnings: ['token expires soon'],
  drains: {},
  verification: { ok: true, perKindAndSource: {}, problems: [] },
  geo: null,
  error: null,
};

describe('summary', () => {
  it('groups item states per kind', () => {
    expect(progressByKind(summary)).toEqual([
      {
        kind: 'projects',
        total: 100,
        done: 82,
        inFlight: 10,
        waiting: 7,
        retrying: 3,
        quarantined: 1,
        staying: 0,
        notSelected: 0,
        skipped: 0,
      },
      {
        kind: 'snippets',
        total: 5,
        done: 5,
        inFlight: 0,
        waiting: 0,
        retrying: 0,
        quarantined: 0,
        staying: 0,
        notSelected: 0,
        skipped: 0,
      },
    ]);
  });

  it('says durations as people read them', () => {
    expect(formatApproxDuration(95_000)).toBe('1m35s');
    expect(formatApproxDuration(7_200_000)).toBe('2h00m');
    expect(formatApproxDuration(null)).toBe('unknown');
  });
});

describe('renderers', () => {
  it('names the way back for the weights with the checkpoint that holds them, and none after a temporary checkpoint', () => {
    const written = {
      ...context,
      weightsWritten: true,
      previousWeights: { 'nfs-1': 100 },
      newWeights: { 'nfs-1': 0, cluster: 100 },
    };
    const kept = renderFinalReport({
      state: 'done',
      context: written,
      summary,
      elapsedMs: 1,
      checkpointFile: '/srv/state/retire.db',
    });
    expect(kept).toContain('shardmove weights restore PLAN --state /srv/state/retire.db');
    const demo = renderFinalReport({
      state: 'done',
      context: written,
      summary,
      elapsedMs: 1,
      checkpointFile: '/tmp/x/demo.db',
      checkpointTemporary: true,
    });
    expect(demo).not.toContain('weights restore');
    expect(demo).toContain('the checkpoint is temporary');
  });

  it('lists the source copies left behind in the final report and in status, and nothing when there are none', () => {
    const orphans = [
      { kind: 'projects' as const, id: 7, name: 'g/p7', source: 'nfs-1', moveId: 70, moveState: 'cleanup failed' },
      { kind: 'projects' as const, id: 8, name: 'g/p8', source: 'nfs-2', moveId: 80, moveState: 'failed' },
    ];
    const text = renderFinalReport({ state: 'done', context, summary: { ...summary, orphans }, elapsedMs: 60_000 });
    expect(text).toContain('Source copies left behind (2)');
    expect(text).toContain('  projects 7 g/p7: copy left on nfs-1 (move 70 cleanup failed)');
    expect(text).toContain('  projects 8 g/p8: copy left on nfs-2 (move 80 failed after the switch)');
    expect(renderFinalReport({ state: 'done', context, summary, elapsedMs: 60_000 })).not.toContain('left behind');
    const status = buildStatusReport('/x.db', null, { ...summary, orphans }, 1);
    expect(status.orphans).toHaveLength(2);
    expect(renderStatus(status)).toContain('projects 8 g/p8: copy left on nfs-2 (move 80 failed after the switch)');
  });

  it('final report shows the Geo resync per secondary site, a failed site, and says when there was no secondary', () => {
    const geo: RunContext['geo'] = {
      sites: [
        {
          siteId: 2,
          name: 'eu',
          results: [
            { registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [] },
            { registryClass: 'SNIPPET_REPOSITORY_REGISTRY', errors: ['resource not available'] },
          ],
          error: null,
        },
        {
          siteId: 3,
          name: 'us',
          results: [],
          error: 'POST /api/v4/geo/node_proxy/3/graphql: HTTP 404: 404 GeoNode Not Found',
        },
      ],
      warnings: [],
    };
    const text = renderFinalReport({
      state: 'done',
      context: { ...context, geoResync: true, geo },
      summary,
      elapsedMs: 60_000,
    });
    expect(text).toContain(
      'Geo resync:\n  "eu" (site 2): requested for PROJECT_REPOSITORY_REGISTRY\n    refused SNIPPET_REPOSITORY_REGISTRY: resource not available\n  "us" (site 3): FAILED: POST /api/v4/geo/node_proxy/3/graphql: HTTP 404',
    );
    const none = renderFinalReport({
      state: 'done',
      context: {
        ...context,
        geoResync: true,
        geo: { sites: [], warnings: ['no Geo secondary: nothing to resync'] },
        warnings: ['no Geo secondary: nothing to resync'],
      },
      summary,
      elapsedMs: 60_000,
    });
    expect(none).toContain('Geo resync:\n  nothing requested: no Geo secondary');
    expect(none).toContain('  - no Geo secondary: nothing to resync');
    // A checkpoint finished before per-site resync still renders.
    const legacy = {
      results: [{ registryClass: 'PROJECT_REPOSITORY_REGISTRY', errors: [] }],
    } as unknown as RunContext['geo'];
    expect(
      renderFinalReport({ state: 'done', context: { ...context, geo: legacy }, summary, elapsedMs: 60_000 }),
    ).toContain('Geo resync requested from the primary only for PROJECT_REPOSITORY_REGISTRY');
  });

  it('final report lists counts, quarantined items with reasons, verification, weights and warnings', () => {
    const text = renderFinalReport({ state: 'doneWithQuarantine', context, summary, elapsedMs: 60_000 });
    expect(text).toContain('DONE WITH QUARANTINED ITEMS');
    expect(text).toContain('projects: 82 moved of 100, 1 quarantined, 17 not finished');
    expect(text).toContain('projects 3 g/p3 on nfs-2 after 3 attempt(s): checksum mismatch');
    expect(text).toContain('Verification: passed');
    expect(text).toContain('Weights before: default=100');
    expect(text).toContain('  - token expires soon');
  });

  it('a failed report gives the step and the cause', () => {
    const text = renderFinalReport({
      state: 'failed',
      context: {
        ...context,
        error: { step: 'storages', code: 'SHARDMOVE_STORAGE_UNKNOWN', message: 'storage "x" not configured' },
      },
      summary,
      elapsedMs: 1,
    });
    expect(text).toMatch(
      /^FAILED\n {2}step: storages\n {2}cause: storage "x" not configured \(SHARDMOVE_STORAGE_UNKNOWN\)/,
    );
  });

  it("status's ETA is the progress line's: a resume's inherited moves give no rate, its own give it", () => {
    const active = {
      planName: 'p',
      planHash: 'h',
      machineVersion: 1,
      snapshot: { status: 'active', value: 'drain', context: { ...context, step: 'drain' } },
    };
    const lock = { pid: 7, host: 'h', startedAt: 0, alive: true };
    // 50 moves ended in the last 10 minutes, but the process resumed 60 s ago and only 2 of them are its own.
    const resumed = { startedAt: 540_000, releasedAt: null, ownMovesSince: () => 2 };
    const early = buildStatusReport('/x.db', active, summary, 600_000, { lock, pace: resumed });
    expect(early).toMatchObject({ movesPerMinute: 0, etaMs: null });
    expect(renderStatus(early)).toContain("ETA measuring (until 5 of this process's moves ended)");
    const later = buildStatusReport('/x.db', active, summary, 600_000, {
      lock,
      pace: { ...resumed, ownMovesSince: () => 10 },
    });
    expect(later.movesPerMinute).toBe(10);
    expect(later.etaMs).toBeCloseTo((17 / 10) * 60_000);
  });

  it('status shows the current drain, counts by storage and quarantine', () => {
    const saved = {
      planName: 'p',
      planHash: 'h',
      machineVersion: 1,
      snapshot: { status: 'active', value: 'drain', context: { ...context, step: 'drain' } },
    };
    // The last process: started at 0, 50 of its own moves ended over the last 10 minutes.
    const pace = { startedAt: 0, releasedAt: null, ownMovesSince: () => 50 };
    const report = buildStatusReport('/x.db', saved, summary, 600_000, { pace });
    expect(report.state).toBe('interrupted');
    expect(report.step).toBe('drain nfs-2/snippets');
    expect(report.movesPerMinute).toBe(5);
    const text = renderStatus(report);
    expect(text).toContain('projects  nfs-2        quarantined  1');
    expect(text).toContain('Quarantined (1):');
    expect(text).toContain('projects  82/100 done, 10 in flight, 7 waiting (3 failed, retrying), 1 quarantined');
    expect(text).toContain('interrupted: no process is running it');
    expect(buildStatusReport('/x.db', null, summary, 0).state).toBe('not started');
  });

  it('status tells a live run from a killed one by the lock holder, and a live holder beats an old final snapshot', () => {
    const active = {
      planName: 'p',
      planHash: 'h',
      machineVersion: 1,
      snapshot: { status: 'active', value: 'drain', context: { ...context, step: 'drain' } },
    };
    const failed = { ...active, snapshot: { status: 'done', value: 'failed', context } };
    const holder = { pid: 77, host: 'h1', startedAt: 0 };
    const live = buildStatusReport('/x.db', active, summary, 1, { lock: { ...holder, alive: true } });
    expect(live.state).toBe('running');
    expect(renderStatus(live)).toContain('running as pid 77 on h1');
    const killed = buildStatusReport('/x.db', active, summary, 1, { lock: { ...holder, alive: false } });
    expect(killed.state).toBe('interrupted');
    expect(renderStatus(killed)).toContain('pid 77 on h1 died holding the lock');
    expect(buildStatusReport('/x.db', active, summary, 1, { lock: { ...holder, alive: null } }).state).toBe('running');
    expect(buildStatusReport('/x.db', failed, summary, 1, { lock: { ...holder, alive: true } }).state).toBe('running');
    expect(buildStatusReport('/x.db', failed, summary, 1, { lock: null }).state).toBe('failed');
  });

  it("status of a live run says what holds it now, in the progress line's words; of an ended one, how it ended", () => {
    const active = {
      planName: 'p',
      planHash: 'h',
      machineVersion: 1,
      snapshot: { status: 'active', value: 'drain', context: { ...context, step: 'drain' } },
    };
    const rule = {
      cap: 0,
      ceiling: 10,
      paused: false,
      limit: 'rule' as const,
      rule: 'disk-busy',
      since: Date.UTC(2026, 0, 1, 12),
      reason: 'rule disk-busy: 0.93 above 0.9: no new move while it holds',
      at: Date.UTC(2026, 0, 1, 12, 0, 5),
    };
    const live = buildStatusReport('/x.db', active, summary, 1, {
      lock: { pid: 7, host: 'h', startedAt: 0, alive: true },
      planConcurrency: 10,
      cap: rule,
    });
    expect(live.now).toMatchObject({ by: 'rule', full: 'HELD by rule disk-busy', stopped: true });
    expect(live.etaMs).toBeNull();
    const text = renderStatus(live);
    expect(text).toContain('  now: HELD by rule disk-busy: 0.93 above 0.9 (since 2026-01-01T12:00:00.000Z)\n');
    expect(text).toContain('moves/min over the last 10 minutes; ETA paused (nothing new is scheduled)');
    // A closed window reads as on the progress line, in the plan's zone.
    const window = { ...rule, limit: 'window' as const, until: Date.UTC(2026, 10, 30, 21) };
    const holder = { pid: 7, host: 'h', startedAt: 0, alive: true };
    const waiting = buildStatusReport('/x.db', active, summary, 1, {
      lock: holder,
      planConcurrency: 10,
      cap: window,
      failures: [],
      last: null,
      timezone: 'Europe/Berlin',
    });
    expect(renderStatus(waiting)).toContain(
      '  now: WAITING for the window at Mon 2026-11-30 22:00 Europe/Berlin (since ',
    );

    // The same checkpoint once the run ended: its outcome, no rule, rate or ETA.
    const done = { ...active, snapshot: { status: 'done', value: 'done', context: { ...context, step: 'done' } } };
    const finished = {
      seq: 9,
      at: Date.UTC(2026, 0, 1, 13),
      type: 'run.finished' as const,
      data: { outcome: 'done' as const, error: null, quarantined: 1 },
    };
    const ended = buildStatusReport('/x.db', done, summary, 1, {
      lock: null,
      planConcurrency: 10,
      cap: rule,
      failures: [],
      last: finished,
    });
    expect(ended).toMatchObject({
      state: 'done',
      ended: { state: 'done', at: finished.at },
      now: null,
      cap: null,
      etaMs: null,
    });
    const endedText = renderStatus(ended);
    expect(endedText).toMatch(
      /^Plan p: done, ended 2026-01-01T13:00:00.000Z\n {2}105 items known: 87 done, 17 remaining\n/,
    );
    expect(endedText).not.toMatch(/moves\/min|ETA|HELD|now: /);
    // The run of a reviewed list: its outcome in words once done, never while it runs.
    expect(buildStatusReport('/x.db', done, summary, 1, { givenList: 'l.jsonl' }).listOutcome).toMatch(
      /of the list l\.jsonl moved/,
    );
    const liveLock = { pid: 7, host: 'h', startedAt: 0, alive: true };
    expect(
      buildStatusReport('/x.db', active, summary, 1, { lock: liveLock, givenList: 'l.jsonl' }).listOutcome,
    ).toBeNull();
    expect(buildStatusReport('/x.db', done, summary, 1).listOutcome).toBeNull();
  });
});

describe('dry-run estimate', () => {
  const MiB = 1024 * 1024;
  // The assumptions the dry run prints beside its estimate, written here rather than read from the code under test.
  const OVERHEAD_MS = 10_000;
  const COUNT_ONLY_MS = 30_000;
  it('uses repository sizes: overhead plus copy time, spread over the lanes, never below the largest move', () => {
    const small = estimateDuration({
      items: 100,
      bytes: 100 * 50 * MiB,
      sized: 100,
      maxBytes: 50 * MiB,
      concurrency: 10,
    });
    expect(small.basis).toBe('sizes');
    expect(small.ms).toBeCloseTo((100 * OVERHEAD_MS + 100 * 1000) / 10);
    expect(small.assumptions).toMatch(
      /from repository sizes \(4\.9 GiB, largest 50 MiB\), assuming ~50 MiB\/s per move/,
    );
    // One 100 GiB repository dominates however many lanes there are.
    const huge = estimateDuration({
      items: 2,
      bytes: 100 * 1024 * MiB + MiB,
      sized: 2,
      maxBytes: 100 * 1024 * MiB,
      concurrency: 10,
    });
    expect(huge.ms).toBeCloseTo(OVERHEAD_MS + 2048 * 1000);
    // Unknown sizes count as the average known size.
    const mixed = estimateDuration({ items: 4, bytes: 2 * 100 * MiB, sized: 2, maxBytes: 100 * MiB, concurrency: 1 });
    expect(mixed.ms).toBeCloseTo(4 * OVERHEAD_MS + 4 * 2000);
    expect(mixed.assumptions).toContain('2 items of unknown size counted as the average 100 MiB');
  });

  it('says plainly when it only has counts', () => {
    const e = estimateDuration({ items: 25, bytes: 0, sized: 0, maxBytes: 0, concurrency: 10 });
    expect(e).toMatchObject({ basis: 'count', ms: 3 * COUNT_ONLY_MS });
    expect(e.assumptions).toMatch(/^count-only estimate: no repository sizes were listed/);
    expect(estimateDuration({ items: 0, bytes: 0, sized: 0, maxBytes: 0, concurrency: 10 }).ms).toBe(0);
  });
});
