import { describe, expect, it } from 'vitest';
import type { RunContext } from '../machine/types.js';
import type { OrphanCopy, StatusSummary } from '../store/types.js';
import { autoCapLines, renderFinalReport, renderStoppedReport } from './final.js';
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
    // Wider than 80 columns: the rest hangs under the text after the label.
    expect(quarantined.split('\n').slice(0, 2)).toEqual([
      'DONE WITH QUARANTINED ITEMS: moved 26 of 136 as planned: move.until reached on',
      '                             nfs-1; 2 quarantined',
    ]);
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
      '\n  not known, and no estimate: the dry run stopped at storages, before it listed\n' +
        '                              the items\n',
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

describe('the final summary holds in 80 columns, its commands whole', () => {
  const src = 'gitaly-nfs-legacy-storage-eu-west-1a';
  const dst = 'gitaly-cluster-praefect-virtual-storage-default';
  const plan = '/etc/shardmove/plans/retire-the-legacy-nfs-storages-of-eu-west.yaml';
  const checkpoint = '/var/lib/shardmove/state/retire-the-legacy-nfs-storages-of-eu-west.db';
  const again = `shardmove run ${plan} --state ${checkpoint} --only /var/lib/shardmove/reviewed.csv`;
  const wide: RunContext = {
    ...context,
    sources: [src, 'gitaly-nfs-legacy-storage-eu-west-1b'],
    destination: dst,
    destinations: [dst],
    previousWeights: { default: 100, [src]: 100, 'gitaly-nfs-legacy-storage-eu-west-1b': 100 },
    newWeights: { default: 0, [src]: 0, 'gitaly-nfs-legacy-storage-eu-west-1b': 0, [dst]: 100 },
    warnings: [
      `the token expires at 2026-12-09T00:00:00Z, before the estimated end of the run; rotate it with shardmove token ${plan}`,
      'the instance runs GitLab 17.5.0, whose project moves keep the source copy when the cleanup job is killed',
    ],
    notes: [
      `room on ${dst}: needs 1.2 TiB + keep_free 200 GiB, free 4.0 TiB: fits (60 item(s) counted by allowance (no size in the API))`,
    ],
    verification: {
      ok: true,
      perKindAndSource: [
        { by: 'records', kind: 'snippets', source: src, moved: 12, quarantined: 1 },
        { kind: 'projects', source: src, kept: 3 },
      ],
      problems: [`projects on ${src}: the listing stopped at page 40 of 41 (HTTP 500), retried by the next run`],
      stays: {
        listed: true,
        total: 2,
        bySource: [{ source: src, why: 'quarantined', n: 2 }],
        items: [
          {
            kind: 'projects',
            id: 41,
            path: 'platform-engineering/infrastructure/terraform-modules',
            source: src,
            why: 'quarantined',
          },
          { kind: 'projects', id: 42, path: 'g/p42', source: src, why: 'quarantined' },
        ],
      },
      content: { fraction: 0.05, sampled: 9, equal: 8, differ: 1, notCompared: 0, differing: [], unchecked: [] },
    },
    geo: {
      sites: [
        {
          siteId: 2,
          name: 'geo-secondary-eu-central-frankfurt',
          results: [
            {
              registryClass: 'PROJECT_REPOSITORY_REGISTRY',
              errors: ['the site is disabled for replication of this class'],
            },
          ],
          error: null,
        },
      ],
      warnings: [],
    },
  };
  const quarantined = [41, 42].map((id) => ({
    kind: 'projects' as const,
    id,
    source: src,
    name: 'platform-engineering/infrastructure/terraform-modules',
    reason: 'Failed to move repository: 13:get object: the repository has corrupted objects (fsck failed)',
    attempts: 3,
  }));
  const orphans = copies.map((c) => ({
    ...c,
    source: src,
    name: 'platform-engineering/infrastructure/terraform-modules',
  }));
  const text = renderFinalReport({
    state: 'doneWithQuarantine',
    context: wide,
    summary: { ...summary, quarantined, orphans },
    elapsedMs: 3_600_000,
    checkpointFile: checkpoint,
    logFile: checkpoint.replace(/\.db$/, '.log'),
    again,
    plan,
  });
  const lines = text.split('\n');

  const commands = [
    `${again} --retry-quarantined`,
    again,
    `shardmove weights restore ${plan} --state ${checkpoint}`,
    `shardmove revert ${plan} --state ${checkpoint}`,
    `shardmove status ${plan} --state ${checkpoint} --json`,
    `shardmove report ${plan} --state ${checkpoint} --html FILE`,
  ];
  /** A line no width can hold: a hashed path after `at`, or a command longer than the width alone on its line. */
  const unbreakable = (l: string) =>
    /^ {4}at @hashed\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}\.git,$/.test(l) ||
    commands.some((c) => l.trim().replace(/[).,]+$/, '') === c || l.trim() === `${c}   (orphans)`);

  it('wraps every line within 80 columns but a hashed path or a command longer than that, alone on its line', () => {
    const over = lines.filter((l) => l.length > 80);
    expect(over.length).toBeGreaterThan(0);
    for (const l of over) expect(unbreakable(l), l).toBe(true);
    expect(text).toContain('\nSource copies left behind (40): moved, but a copy stays on the old storage;\n');
  });

  it('hangs each continuation under the text after its label', () => {
    const at = lines.findIndex((l) => l.startsWith('Verification: '));
    expect(lines[at + 1]).toMatch(/^ {14}\S/);
    const warning = lines.findIndex((l) => l.startsWith('  - the token expires'));
    expect(lines[warning + 1]).toMatch(/^ {4}\S/);
  });

  it('never breaks a command the operator pastes: each stands whole on one line', () => {
    const commands = [
      `${again} --retry-quarantined`,
      `shardmove weights restore ${plan} --state ${checkpoint}`,
      `shardmove revert ${plan} --state ${checkpoint}`,
      `shardmove status ${plan} --state ${checkpoint} --json`,
      `shardmove report ${plan} --state ${checkpoint} --html FILE`,
      '`praefect metadata -virtual-storage <storage> -relative-path <path>`',
    ];
    for (const c of commands)
      expect(
        lines.some((l) => l.includes(c)),
        c,
      ).toBe(true);
    // Too long for the rest of its label's line: on a line of its own, nothing but the command (and its punctuation).
    const once = lines.findIndex((l) => l.trim() === 'once fixed:');
    expect(lines[once + 1]!.trim()).toBe(`${again} --retry-quarantined`);
  });

  it('wraps at a wider terminal when told to, and not at all when the line fits', () => {
    const at120 = renderFinalReport({
      state: 'doneWithQuarantine',
      context: wide,
      summary: { ...summary, quarantined, orphans },
      elapsedMs: 3_600_000,
      checkpointFile: checkpoint,
      again,
      plan,
      width: 120,
    });
    expect(at120).toContain(`\nVerification: passed for what this run moves; 2 items stay on ${src} (2 quarantined)\n`);
    for (const l of at120.split('\n')) if (l.length > 120) expect(unbreakable(l), l).toBe(true);
  });

  it("a dry run's refusals and Would move lines hold in 80 columns too", () => {
    const dry = renderFinalReport({
      state: 'done',
      context: {
        ...wide,
        dryRun: true,
        wouldRefuse: [`another run drains ${src} of https://gitlab.example.com on this host: pid 4121 on ops-1`],
        drains: {
          [`${src}/snippets`]: {
            kind: 'snippets',
            source: src,
            moved: 0,
            quarantined: 0,
            remaining: 0,
            byRecords: true,
          },
        },
      },
      summary: { ...summary, counts: [{ kind: 'projects', source: src, state: 'pending', n: 134 }], staying: [] },
      elapsedMs: 0,
      checkpointFile: checkpoint,
      estimate: { bytes: 4 * 2 ** 40, sized: 134, maxBytes: 2 ** 38, concurrency: 10 },
      plan,
    });
    expect(dry).toContain('\nWould move:\n');
    expect(dry).toContain(`\n  snippets on ${src}: unknown number, by one bulk\n    move (the instance does not`);
    for (const l of dry.split('\n')) if (l.length > 80) expect(unbreakable(l), l).toBe(true);
  });

  it('takes the secrets out before it wraps: a secret with a space is never split, so never missed', () => {
    const secret = 'correct horse battery staple';
    const scrubbed = renderFinalReport({
      state: 'done',
      context: { ...context, warnings: [`${'x'.repeat(60)} the password ${secret} was refused`] },
      summary,
      elapsedMs: 0,
      scrub: (t) => t.split(secret).join('[REDACTED]'),
    });
    expect(scrubbed).toContain('[REDACTED]');
    for (const word of secret.split(' ')) expect(scrubbed).not.toContain(word);
  });

  it('a stopped run holds in 80 columns too', () => {
    const stopped = renderStoppedReport({
      stop: { at: 0, by: 'control' },
      inFlight: 3,
      stopFile: '/var/lib/shardmove/state/stop',
      step: 'drain',
      dryRun: false,
      summary: { ...summary, quarantined },
      elapsedMs: 0,
      checkpointFile: checkpoint,
      notes: ['the stop file /var/lib/shardmove/state/stop could not be removed: EACCES, permission denied'],
      again,
      plan,
    });
    for (const l of stopped.split('\n')) if (l.length > 80) expect(unbreakable(l), l).toBe(true);
    expect(stopped.split('\n').some((l) => l.includes(again))).toBe(true);
    expect(stopped).toContain(`\nTo continue from here:\n  ${again}\n`);
  });

  it("a stopped run's took covers the whole migration, and a stop from the console says so", () => {
    const stopped = renderStoppedReport({
      stop: { at: 0, by: 'console' },
      inFlight: 0,
      stopFile: '/var/lib/shardmove/state/stop',
      step: 'drain',
      dryRun: false,
      summary,
      elapsedMs: 60_000,
      span: {
        startedAt: Date.parse('2026-12-01T22:00:00Z'),
        endedAt: null,
        wallMs: 3 * 3_600_000,
        activeMs: 2 * 3_600_000,
        processes: 3,
      },
      notes: [],
      again,
      plan,
    });
    expect(stopped).toMatch(/^STOPPED on request \(the console\): nothing was in flight\n/);
    expect(stopped).toContain('  took 3h00m from the first start at 2026-12-01T22:00:00Z\n');
    expect(stopped).toContain('  running 2h00m of it, in 3 processes (this one 1m00s)\n');
  });
});

describe("the final report's cap timeline under move.concurrency: auto", () => {
  const at = (s: number) => Date.parse('2026-06-01T00:00:00Z') + s * 1000;
  it('lists the newest changes with their time and reason, and says how many came before', () => {
    const caps = Array.from({ length: 10 }, (_, i) => ({ at: at(i * 30), cap: 2 + i, reason: `reason ${i}` }));
    const lines = autoCapLines(caps);
    expect(lines.slice(0, 3)).toEqual([
      '',
      'Cap chosen by move.concurrency: auto (10 changes):',
      '  (2 earlier; shardmove report lists every change)',
    ]);
    expect(lines[3]).toBe('  00:01:00 UTC  cap 4: reason 2');
    expect(lines.at(-1)).toBe('  00:04:30 UTC  cap 11: reason 9');
    expect(lines).toHaveLength(11);
  });

  it('says nothing without a change of the limiter (a plan with a number)', () => {
    expect(autoCapLines([])).toEqual([]);
  });
});
