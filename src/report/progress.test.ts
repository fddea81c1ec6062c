import { realTimersAt } from '../../test/support/fake-clock.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CapData } from '../events/vocabulary.js';
import type { ObservedRun } from '../runtime/observe/observer.js';
import type { RunControl, StatusSummary } from '../store/types.js';
import { NO_CONTROL } from '../store/types.js';
import { autoCapOf, holdOf } from '../events/hold.js';
import type { Hold } from '../events/hold.js';
import { createProgressObserver } from '../cli/progress-observer.js';
import { PaceMeter } from './pace.js';
import type { ProgressSink } from '../cli/progress-observer.js';
import { renderHoldNote, renderProgressLine, textWidth } from './progress.js';
import type { ProgressView } from './progress.js';

const summary: Pick<StatusSummary, 'counts' | 'retrying'> = {
  counts: [
    { kind: 'projects', source: 'nfs-1', state: 'moved', n: 80 },
    { kind: 'projects', source: 'nfs-1', state: 'left', n: 2 },
    { kind: 'projects', source: 'nfs-1', state: 'in_flight', n: 8 },
    { kind: 'projects', source: 'nfs-1', state: 'scheduling', n: 2 },
    { kind: 'projects', source: 'nfs-2', state: 'pending', n: 7 },
    { kind: 'projects', source: 'nfs-2', state: 'quarantined', n: 1 },
    { kind: 'snippets', source: 'nfs-1', state: 'moved', n: 5 },
  ],
  retrying: [{ kind: 'projects', source: 'nfs-2', n: 3 }],
};

const BREAKER_REASON =
  'paused by the failure breaker: 20 moves failed within 15m (retry.pause_after); look at the failed moves (shardmove status), then shardmove control --unpause';
const paused = (pausedBy: string | null = null): RunControl => ({
  ...NO_CONTROL,
  paused: true,
  pausedBy,
  updatedAt: 1,
});
const capOf = (c: Partial<CapData> & Pick<CapData, 'limit'>): CapData => ({
  cap: 0,
  ceiling: 10,
  paused: false,
  reason: '',
  ...c,
});
const RULE = capOf({
  limit: 'rule',
  rule: 'disk-busy',
  since: 0,
  reason: 'rule disk-busy: 0.93 {instance="gitaly-1:9100"} above 0.9: no new move while it holds',
});

const view = (over: Partial<ProgressView> = {}): ProgressView => ({
  step: 'drain nfs-2/projects',
  summary,
  elapsedMs: 120_000,
  hold: null,
  perMinute: 25,
  ...over,
});

describe('holdOf: who holds the run, in the same words everywhere', () => {
  it.each<[string, CapData | null, RunControl | null, Partial<Hold> | null]>([
    ['the plan', capOf({ limit: 'plan', cap: 10 }), NO_CONTROL, null],
    ['no cap recorded yet', null, NO_CONTROL, null],
    ['an operator pause', null, paused(), { by: 'control', stopped: true, full: 'PAUSED by shardmove control' }],
    [
      'the breaker',
      capOf({ limit: 'paused', paused: true, reason: BREAKER_REASON }),
      paused(BREAKER_REASON),
      { by: 'breaker', stopped: true, full: 'PAUSED by the failure breaker', detail: '20 moves failed within 15m' },
    ],
    ['a pause recorded but lifted since', capOf({ limit: 'paused', paused: true }), NO_CONTROL, null],
    [
      "an operator's pause over the breaker's",
      capOf({ limit: 'paused', paused: true, reason: BREAKER_REASON }),
      paused(),
      { by: 'control', full: 'PAUSED by shardmove control' },
    ],
    [
      'a rule',
      RULE,
      NO_CONTROL,
      {
        by: 'rule',
        stopped: true,
        full: 'HELD by rule disk-busy',
        detail: '0.93 {instance="gitaly-1:9100"} above 0.9',
      },
    ],
    [
      'the room',
      capOf({ limit: 'rule', rule: 'capacity:cluster', reason: 'rule capacity:cluster: 1e9 below 2e9' }),
      NO_CONTROL,
      { by: 'capacity', stopped: true, full: 'HELD: no room on cluster' },
    ],
    [
      'a closed window',
      capOf({ limit: 'window', until: Date.UTC(2026, 10, 30, 22) }),
      NO_CONTROL,
      { by: 'window', stopped: true, full: 'WAITING for the window at Mon 2026-11-30 22:00 UTC' },
    ],
    [
      'the throttle at 0',
      capOf({ limit: 'throttle', reason: 'nfs-1 unhealthy' }),
      NO_CONTROL,
      { by: 'throttle', stopped: true, full: 'HELD by the throttle', detail: 'nfs-1 unhealthy' },
    ],
    [
      'the throttle lower',
      capOf({ limit: 'throttle', cap: 3, reason: 'latency' }),
      NO_CONTROL,
      { stopped: false, full: 'cap 3 of 10 (throttle)' },
    ],
    [
      'an operator cap',
      capOf({ limit: 'control', cap: 4, ceiling: 4 }),
      { ...NO_CONTROL, concurrency: 4 },
      { stopped: false, full: 'cap 4 (shardmove control)' },
    ],
  ])('%s', (_what, cap, control, expected) => {
    const h = holdOf(cap, control);
    if (expected === null) expect(h).toBeNull();
    else expect(h).toMatchObject(expected);
  });
});

describe('renderProgressLine', () => {
  it('says everything when there is no width to keep to (files and pipes)', () => {
    expect(renderProgressLine(view())).toBe(
      '[2m00s] drain projects from nfs-2 | 87/105 done, 10 in flight, 3 retrying, 1 quarantined | 25 moves/min, ETA 41s | projects 82/100, snippets 5/5',
    );
  });

  it('says what a drain moves from where, not a path', () => {
    expect(renderProgressLine(view({ step: 'drain nfs-1,nfs-2/projects,snippets,groups' }))).toContain(
      '[2m00s] drain projects, snippets, groups from nfs-1, nfs-2 | 87/105 done',
    );
    expect(renderProgressLine(view({ step: 'drain nfs-1,nfs-2/projects,snippets,groups' }))).not.toContain('nfs-2/');
  });

  it('says the ETA is paused while nothing is scheduled, and has no rate then', () => {
    const line = renderProgressLine(view({ hold: holdOf(RULE, NO_CONTROL) }));
    expect(line).toContain('| HELD by rule disk-busy: 0.93 {instance="gitaly-1:9100"} above 0.9 |');
    expect(line).toContain('| ETA paused |');
    expect(line).not.toContain('moves/min');
    expect(renderProgressLine(view({ hold: holdOf(null, paused(BREAKER_REASON)) }))).toContain(
      '| PAUSED by the failure breaker: 20 moves failed within 15m |',
    );
  });

  it('has no rate before one was measured, and no ETA at all once the process is stopping', () => {
    expect(renderProgressLine(view({ perMinute: null }))).toContain('| ETA measuring |');
    const stopping = renderProgressLine(view({ stopping: true }));
    expect(stopping).toContain('| STOPPING: the step in flight returns, then the checkpoint is saved |');
    expect(stopping).not.toMatch(/ETA|moves\/min/);
  });

  it('has no rate or ETA outside a drain', () => {
    expect(renderProgressLine(view({ step: 'verify' }))).toBe(
      '[2m00s] verify | 87/105 done, 10 in flight, 3 retrying, 1 quarantined | projects 82/100, snippets 5/5',
    );
  });

  it('fits every width: the least important parts go first, the hold and the counts stay, no number is cut', () => {
    for (const v of [
      view(),
      view({ hold: holdOf(RULE, NO_CONTROL) }),
      view({ hold: holdOf(null, paused(BREAKER_REASON)) }),
    ]) {
      const numbers = (line: string) => line.match(/\d+(?:[./]\d+)*/g) ?? [];
      const whole = new Set(numbers(renderProgressLine(v)));
      for (let width = 12; width <= 200; width++) {
        const line = renderProgressLine(v, { width });
        expect(textWidth(line), `${width}: ${line}`).toBeLessThanOrEqual(width);
        for (const n of numbers(line)) expect(whole.has(n), `${width}: "${n}" in ${line}`).toBe(true);
        if (width >= 60) expect(line, `${width}`).toContain('87/105 done');
        if (width >= 40 && v.hold) expect(line, `${width}`).toMatch(/HELD|PAUSED/);
      }
    }
    // At 80 columns: the hold with its reason, the counts with the moves in flight; the label gave way.
    expect(renderProgressLine(view({ hold: holdOf(RULE, NO_CONTROL) }), { width: 79 })).toBe(
      'HELD (disk-busy): 0.93 above 0.9 | 87/105 done, 10 in flight, 1 quarantined',
    );
    expect(renderProgressLine(view(), { width: 79 })).toBe(
      '87/105 done, 10 in flight, 3 retrying, 1 quarantined | 25 moves/min, ETA 41s',
    );
    // At 160 a rule's hold no longer pushes the counts off.
    expect(renderProgressLine(view({ hold: holdOf(RULE, NO_CONTROL) }), { width: 159 })).toContain(
      '87/105 done, 10 in flight, 3 retrying, 1 quarantined | ETA paused',
    );
  });

  it('colours only when asked, and counts the width without the colour codes', () => {
    const plain = renderProgressLine(view({ hold: holdOf(null, paused(BREAKER_REASON)) }), { width: 79 });
    // eslint-disable-next-line no-control-regex -- looking for the colour codes
    expect(plain).not.toMatch(/\x1b/);
    const coloured = renderProgressLine(view({ hold: holdOf(null, paused(BREAKER_REASON)) }), {
      width: 79,
      colour: true,
    });
    expect(coloured).toContain('\x1b[1;31mPAUSED (breaker)\x1b[0m');
    // eslint-disable-next-line no-control-regex -- the colour codes taken out again
    expect(coloured.replace(/\x1b\[[\d;]*m/g, '')).toBe(plain);
  });

  it('escapes control characters in text from the checkpoint, and keeps it on one line', () => {
    const line = renderProgressLine(
      view({
        step: 'drain evil\x1b[2J/projects',
        hold: holdOf(capOf({ limit: 'rule', rule: 'r', reason: 'a\nb\x07' }), NO_CONTROL),
      }),
    );
    expect(line).toContain('drain projects from evil\\u001b[2J');
    expect(line).toContain('HELD by rule r: a b\\u0007');
    // eslint-disable-next-line no-control-regex -- nothing raw may reach the terminal
    expect(line).not.toMatch(/[\x00-\x1f]/);
  });

  it('leaves a note when the run is paused, held or released', () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const at = new Date(now).toTimeString().slice(0, 8);
    expect(renderHoldNote(view({ hold: holdOf(null, paused(BREAKER_REASON)) }), '', now)).toBe(
      `${at} PAUSED by the failure breaker: 20 moves failed within 15m`,
    );
    expect(renderHoldNote(view(), 'HELD by rule disk-busy', now)).toBe(
      `${at} going on: no longer held by rule disk-busy`,
    );
    expect(renderHoldNote(view(), 'HELD: no room on cluster', now)).toBe(`${at} going on: room on cluster again`);
    expect(renderHoldNote(view(), 'WAITING for the window at Mon 2026-11-30 22:00 UTC', now)).toBe(
      `${at} going on: a maintenance window is open`,
    );
  });
});

/** An observed run whose checkpoint answers from what the test sets. */
function fakeRun(state: {
  summary: Pick<StatusSummary, 'counts' | 'retrying'>;
  control: RunControl;
  cap: CapData | null;
  seq: number;
  now: number;
  step: string;
  signal?: AbortSignal;
  /** When this process's own moves ended (the pace counts them from the checkpoint). */
  ownEnded?: number[];
}): ObservedRun {
  return {
    plan: { name: 'p' } as ObservedRun['plan'],
    checkpoint: '/x.db',
    host: 'h',
    fromSeq: 0,
    startedAt: 0,
    pace: new PaceMeter(state.now, (from) => (state.ownEnded ?? []).filter((t) => t >= from).length),
    dryRun: false,
    clock: { ...realTimersAt(() => state.now), sleep: () => Promise.resolve() },
    step: () => state.step,
    ...(state.signal ? { signal: state.signal } : {}),
    store: {
      summary: () => ({ quarantined: [], movedLast10Min: 0, total: 0, stuck: [], ...state.summary }),
      readControl: () => state.control,
      lastEventSeq: () => state.seq,
      lastEventOf: ((_types: unknown, window: number) =>
        state.cap && window > 0
          ? { seq: state.seq, at: 0, type: 'cap.changed', data: { ...state.cap, previous: null } }
          : null) as ObservedRun['store']['lastEventOf'],
      readEvents: () => [],
      getItem: () => null,
    },
  };
}

function sink(tty: boolean, columns = 80) {
  const shown: string[] = [];
  const printed: string[] = [];
  let cleared = 0;
  const s: ProgressSink = {
    tty,
    colour: false,
    columns: () => columns,
    show: (l) => void shown.push(l),
    clear: () => void cleared++,
    print: (l) => void printed.push(l),
  };
  return { s, shown, printed, cleared: () => cleared };
}

describe('the progress observer', () => {
  afterEach(() => void vi.useRealTimers());

  it('on a terminal: shows a pause at once from the live control, with a note that stays, and clears the line at the end', () => {
    vi.useFakeTimers();
    const state = {
      summary,
      control: NO_CONTROL,
      cap: capOf({ limit: 'plan', cap: 10 }),
      seq: 5,
      now: 0,
      step: 'drain nfs-2/projects',
    };
    const out = sink(true, 200);
    const o = createProgressObserver(out.s);
    o.started!(fakeRun(state));
    vi.advanceTimersByTime(300);
    expect(out.shown.at(-1)).toContain('87/105 done');
    expect(out.printed).toEqual([]);
    state.control = paused();
    vi.advanceTimersByTime(300);
    expect(out.shown.at(-1)).toContain('PAUSED by shardmove control');
    expect(out.shown.at(-1)).toContain('ETA paused');
    expect(out.printed).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d PAUSED by shardmove control$/),
      // The fake run was not given how it was named: the command with a PLAN placeholder.
      '  next: `shardmove control PLAN --unpause` goes on',
    ]);
    state.control = NO_CONTROL;
    vi.advanceTimersByTime(300);
    expect(out.printed.at(-1)).toMatch(/going on: no longer paused by shardmove control$/);
    void o.stopped!();
    expect(out.cleared()).toBe(1);
    const n = out.shown.length;
    vi.advanceTimersByTime(5_000);
    expect(out.shown).toHaveLength(n);
  });

  it("on a terminal: the cap move.concurrency: auto chose, from the run's last recorded cap", () => {
    vi.useFakeTimers();
    const state = {
      summary,
      control: NO_CONTROL,
      cap: capOf({ limit: 'plan', cap: 8, ceiling: 8, reason: 'auto: throughput flat at 8, 12 moved slower' }),
      seq: 5,
      now: 0,
      step: 'drain nfs-2/projects',
    };
    const out = sink(true, 200);
    const o = createProgressObserver(out.s);
    o.started!(fakeRun(state));
    vi.advanceTimersByTime(300);
    expect(out.shown.at(-1)).toContain('| cap 8 (auto): throughput flat at 8, 12 moved slower |');
    void o.stopped!();
  });

  it('on a terminal: a rule recorded by the drain holds the line, and a stopping run shows no ETA', () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const state = {
      summary,
      control: NO_CONTROL,
      cap: RULE,
      seq: 9,
      now: 0,
      step: 'drain nfs-2/projects',
      signal: controller.signal,
    };
    const out = sink(true);
    const o = createProgressObserver(out.s);
    o.started!(fakeRun(state));
    vi.advanceTimersByTime(300);
    expect(out.shown.at(-1)).toContain('HELD (disk-busy)');
    controller.abort();
    vi.advanceTimersByTime(300);
    expect(out.shown.at(-1)).toContain('STOPPING');
    expect(out.shown.at(-1)).not.toContain('ETA');
    void o.stopped!();
  });

  it('in a file or a pipe: a line every 10 s, and one at once when the run is paused', () => {
    vi.useFakeTimers();
    const state = { summary, control: NO_CONTROL, cap: null, seq: 1, now: 0, step: 'drain nfs-2/projects' };
    const out = sink(false);
    const o = createProgressObserver(out.s);
    o.started!(fakeRun(state));
    o.progress!();
    vi.advanceTimersByTime(9_000);
    expect(out.printed).toEqual([]);
    vi.advanceTimersByTime(2_000);
    expect(out.printed).toHaveLength(1);
    // A pipe has no width: the whole line, the label in words.
    expect(out.printed[0]).toMatch(/^\[0s\] drain projects from nfs-2 \| 87\/105 done, 10 in flight, /);
    state.control = paused(BREAKER_REASON);
    vi.advanceTimersByTime(1_000);
    expect(out.printed).toHaveLength(3);
    expect(out.printed[1]).toContain('PAUSED by the failure breaker: 20 moves failed within 15m');
    expect(out.printed[2]).toBe(
      '  next: "Failed moves" in status lists what it counted; `shardmove control PLAN --unpause` goes on',
    );
    vi.advanceTimersByTime(10_000);
    expect(out.printed).toHaveLength(4);
    void o.stopped!();
    vi.advanceTimersByTime(30_000);
    expect(out.printed).toHaveLength(4);
    expect(out.shown).toEqual([]);
  });

  it('a resumed run shows no rate from the moves of the process before it', () => {
    vi.useFakeTimers();
    const moved = (n: number): Pick<StatusSummary, 'counts' | 'retrying'> => ({
      counts: [
        { kind: 'projects', source: 'nfs-1', state: 'moved', n },
        { kind: 'projects', source: 'nfs-1', state: 'pending', n: 200 - n },
      ],
    });
    const state = {
      summary: moved(90),
      control: NO_CONTROL,
      cap: null,
      seq: 1,
      now: 600_000,
      step: 'drain nfs-1/projects',
      ownEnded: [] as number[],
    };
    const out = sink(true);
    const o = createProgressObserver(out.s);
    o.started!(fakeRun(state));
    state.now += 1_000;
    vi.advanceTimersByTime(300);
    expect(out.shown.at(-1)).toContain('ETA measuring');
    state.summary = moved(110);
    // The 90 were the last process's; 20 of this one's ended over its first minute.
    state.ownEnded = Array.from({ length: 20 }, (_, i) => 601_000 + i * 3_000);
    state.now += 60_000;
    vi.advanceTimersByTime(300);
    expect(out.shown.at(-1)).toMatch(/\| 20 moves\/min, ETA 4m3\ds$/);
    void o.stopped!();
  });
});

describe('the progress line under move.concurrency: auto', () => {
  const auto = capOf({ limit: 'plan', cap: 8, ceiling: 8, reason: 'auto: throughput flat at 8, 12 moved slower' });

  it("says the limiter's cap and its last reason when nothing holds the run", () => {
    const a = autoCapOf(auto);
    expect(a).toEqual({ cap: 8, reason: 'throughput flat at 8, 12 moved slower' });
    const line = renderProgressLine(view({ auto: a }));
    expect(line).toContain('| cap 8 (auto): throughput flat at 8, 12 moved slower | 87/105 done, 10 in flight');
  });

  it('gives the reason up before the counts on a narrow line', () => {
    const line = renderProgressLine(view({ auto: autoCapOf(auto) }), { width: 60 });
    expect(textWidth(line)).toBeLessThanOrEqual(60);
    expect(line).toContain('cap 8');
    expect(line).toContain('10 in flight');
  });

  it('says nothing of it under a fixed cap, a pin, a pause or a hold (those are the hold)', () => {
    expect(autoCapOf(capOf({ limit: 'plan', cap: 10, reason: "the plan's move.concurrency" }))).toBeNull();
    expect(autoCapOf(capOf({ limit: 'control', cap: 6, reason: 'set with shardmove control' }))).toBeNull();
    expect(autoCapOf(RULE)).toBeNull();
    expect(autoCapOf(null)).toBeNull();
    // A hold shown wins over the limiter's words.
    const held = renderProgressLine(view({ hold: holdOf(RULE, NO_CONTROL), auto: autoCapOf(auto) }));
    expect(held).toContain('HELD by rule disk-busy');
    expect(held).not.toContain('(auto)');
  });
});
