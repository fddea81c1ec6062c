import { describe, expect, it } from 'vitest';
import type { RunContext } from '../machine/types.js';
import type { OrphanCopy, StatusSummary } from '../store/types.js';
import { renderFinalReport } from './final.js';
import { buildStatusReport, renderStatus } from './status.js';

const context: RunContext = {
  sources: ['nfs-1'],
  destination: 'cluster',
  destinations: ['cluster', 'nfs-2'],
  kinds: ['projects'],
  verify: true,
  geoResync: false,
  dryRun: false,
  step: 'done',
  startedAt: 0,
  tokenExpiresAt: null,
  sourceIndex: 0,
  kindIndex: 0,
  previousWeights: { default: 100 },
  newWeights: { default: 100, cluster: 100, 'nfs-2': 100, 'nfs-1': 0 },
  weightsWritten: true,
  instanceVersion: '17.11.0',
  warnings: ['the run has 2 fork networks that lose their pools'],
  notes: ['room on cluster: needs 2.0 GiB + keep_free 0 B, free 4.0 TiB: fits'],
  drains: {},
  verification: { ok: true, perKindAndSource: {}, problems: [] },
  geo: null,
  error: null,
};

const summary: StatusSummary = {
  counts: [
    { kind: 'projects', source: 'nfs-1', state: 'moved', n: 26 },
    { kind: 'projects', source: 'nfs-1', state: 'pending', n: 108 },
  ],
  quarantined: [],
  movedLast10Min: 0,
  total: 134,
  stuck: [],
  boundsReached: ['nfs-1'],
  staying: [{ kind: 'projects', source: 'nfs-1', n: 108 }],
};

const copies: OrphanCopy[] = Array.from({ length: 40 }, (_, i) => ({
  kind: 'projects',
  id: 100 + i,
  name: `g/p${100 + i}`,
  source: 'nfs-1',
  moveId: 500 + i,
  moveState: 'cleanup failed',
}));

const report = (over: {
  context?: Partial<RunContext>;
  summary?: Partial<StatusSummary>;
  state?: 'done' | 'doneWithQuarantine' | 'failed';
}) =>
  renderFinalReport({
    state: over.state ?? 'done',
    context: { ...context, ...over.context },
    summary: { ...summary, ...over.summary },
    elapsedMs: 60_000,
    checkpointFile: '/srv/state/x.db',
    estimate: { bytes: 4 * 2 ** 30, sized: 26, maxBytes: 2 ** 28, concurrency: 10 },
  });

describe('the final summary says what happened, briefly', () => {
  it('a partial drain: how many of how many moved and where the bound stopped it, never "every repository"', () => {
    const text = report({});
    expect(text.split('\n')[0]).toBe('DONE: moved 26 of 134 as planned: move.until reached on nfs-1');
    expect(text).not.toContain('every repository');
    expect(text).toContain('\n  in all: 26 moved of 134; 108 stay on nfs-1 as planned (move.until)\n');
    const quarantined = report({
      state: 'doneWithQuarantine',
      summary: { counts: [...summary.counts, { kind: 'projects', source: 'nfs-1', state: 'quarantined', n: 2 }] },
    });
    expect(quarantined.split('\n')[0]).toBe(
      'DONE WITH QUARANTINED ITEMS: moved 26 of 136 as planned: move.until reached on nfs-1; 2 quarantined',
    );
  });

  it('a run that did not verify does not say verified', () => {
    const whole = { counts: [{ kind: 'projects' as const, source: 'nfs-1', state: 'moved', n: 3 }], staying: [] };
    expect(report({ summary: whole }).split('\n')[0]).toBe('DONE: every repository moved and verified');
    expect(report({ summary: whole, context: { verify: false, verification: null } }).split('\n')[0]).toBe(
      'DONE: every repository moved, not verified (plan: verify false)',
    );
  });

  it('the run of a reviewed list says its items moved, not every repository', () => {
    const whole = { counts: [{ kind: 'projects' as const, source: 'nfs-1', state: 'moved', n: 3 }], staying: [] };
    const text = renderFinalReport({
      state: 'done',
      context,
      summary: { ...summary, ...whole },
      elapsedMs: 1000,
      checkpointFile: '/srv/state/x.db',
      givenList: 'reviewed items.jsonl',
    });
    expect(text.split('\n')[0]).toBe('DONE: every item of the list reviewed items.jsonl moved and verified');
  });

  it('room that fits is a note, apart from the warnings', () => {
    const text = report({});
    expect(text).toContain(
      '\nRoom (checked by pre-flight):\n  room on cluster: needs 2.0 GiB + keep_free 0 B, free 4.0 TiB: fits\n',
    );
    expect(text).toContain('\nWarnings (1):\n  - the run has 2 fork networks that lose their pools\n');
  });

  it('a dry run estimates the bounded scope; a failed one estimates nothing and says why', () => {
    const dry = {
      dryRun: true,
      drains: {
        'nfs-1/projects': {
          kind: 'projects' as const,
          source: 'nfs-1',
          moved: 0,
          quarantined: 0,
          remaining: 26,
          kept: 108,
        },
      },
    };
    const pending = { counts: [{ kind: 'projects' as const, source: 'nfs-1', state: 'pending', n: 134 }] };
    const ok = report({ context: dry, summary: pending });
    expect(ok).toContain('\n  projects on nfs-1: 26 of 134 (108 stay: move.until)\n');
    expect(ok).toContain('\n  in all: 26 of 134 items; 108 stay on nfs-1 as planned (move.until)\n');
    expect(ok).toContain('\n  known size: 4.0 GiB in 26 of 26 items\n');
    expect(ok).toMatch(/\n {2}estimated duration: \d+s at 10 moves in flight\n/);
    const failed = report({
      state: 'failed',
      context: {
        dryRun: true,
        step: 'storages',
        error: { step: 'storages', code: 'SHARDMOVE_STORAGE_UNKNOWN', message: 'storage "nfs-9" not configured' },
      },
      summary: { counts: [], staying: [], boundsReached: [] },
    });
    expect(failed).not.toMatch(/estimated duration|known size/);
    expect(failed).toContain(
      '\n  not known, and no estimate: the dry run stopped at storages, before it listed the items\n',
    );
  });

  it('lists a few left-behind copies and says where the whole list is; status keeps them all', () => {
    const text = report({ summary: { orphans: copies } });
    const section = text.split('\nSource copies left behind (40)')[1]!.split('\n\n')[0]!;
    // Three copies, each with its repository path whole and its wiki and design repositories by their ending.
    expect(section.match(/@hashed/g)).toHaveLength(3);
    expect(section.match(/with its \.wiki\.git and \.design\.git beside it/g)).toHaveLength(3);
    expect(section).toContain(
      [
        '  ... and 37 more: every one, with its paths on the storage, in:',
        '    shardmove status PLAN --state /srv/state/x.db --json   (orphans)',
        '    shardmove report PLAN --state /srv/state/x.db --html FILE',
      ].join('\n'),
    );
    // Every line of it fits a terminal, and a path with a space is pasted back whole.
    for (const l of section.split('\n').filter((x) => !x.includes('@hashed')))
      expect(l.length, l).toBeLessThanOrEqual(80);
    const spaced = renderFinalReport({
      state: 'done',
      context,
      summary: { ...summary, orphans: copies },
      elapsedMs: 0,
      checkpointFile: "/srv/my state/it's.db",
    });
    expect(spaced).toContain(`    shardmove status PLAN --state '/srv/my state/it'\\''s.db' --json   (orphans)\n`);
    const status = buildStatusReport('/srv/state/x.db', null, { ...summary, orphans: copies }, 0);
    expect(status.orphans).toHaveLength(40);
    expect(renderStatus(status).match(/copy left on nfs-1/g)).toHaveLength(40);
  });
});

describe('the commands a run report prints are the ones that continue it', () => {
  const quarantined = [
    { kind: 'projects' as const, id: 7, source: 'nfs-1', name: 'g/p7', reason: 'failed', attempts: 3 },
  ];
  it("a run's quarantine names run --retry-quarantined and keeps each remedy's own words; a revert's says revert", () => {
    const run = renderFinalReport({
      state: 'doneWithQuarantine',
      context,
      summary: { ...summary, quarantined },
      elapsedMs: 0,
      again: "shardmove run 'my plan.yaml' --only l.csv",
      plan: 'my plan.yaml',
    });
    expect(run).toContain("\n  once fixed: shardmove run 'my plan.yaml' --only l.csv --retry-quarantined\n");
    expect(run).not.toContain('run the revert again');
    const revert = renderFinalReport({
      state: 'doneWithQuarantine',
      context,
      summary: { ...summary, quarantined },
      elapsedMs: 0,
      again: 'shardmove revert p.yaml',
      revertOf: '/srv/state/p.db',
    });
    expect(revert).toContain('\n  once fixed: shardmove revert p.yaml --retry-quarantined\n');
  });

  it('the list of left-behind copies is read with the status and report commands of this checkpoint', () => {
    const text = renderFinalReport({
      state: 'done',
      context,
      summary: { ...summary, orphans: copies },
      elapsedMs: 0,
      checkpointFile: '/srv/state/x.db',
      plan: 'my plan.yaml',
    });
    expect(text).toContain("shardmove weights restore 'my plan.yaml' --state /srv/state/x.db)");
    expect(text).toContain("shardmove revert 'my plan.yaml' --state /srv/state/x.db)");
    expect(text).toContain("    shardmove status 'my plan.yaml' --state /srv/state/x.db --json   (orphans)\n");
    expect(text).toContain("    shardmove report 'my plan.yaml' --state /srv/state/x.db --html FILE\n");
  });
});
