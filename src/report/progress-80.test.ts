import { describe, expect, it } from 'vitest';
import type { CapData } from '../events/vocabulary.js';
import { holdOf } from '../events/hold.js';
import { NO_CONTROL } from '../store/types.js';
import type { StatusSummary } from '../store/types.js';
import { describeRule } from '../schedule/rules.js';
import { parseControlChange } from '../cli/control.js';
import { holdNextStep } from './next-step.js';
import { renderProgressLine, textWidth } from './progress.js';
import type { ProgressView } from './progress.js';

// The operator's screens of a two-storage drain at 3 a.m.: what an 80-column tmux pane keeps.
const summary: Pick<StatusSummary, 'counts' | 'retrying'> = {
  counts: [
    { kind: 'projects', source: 'nfs-1', state: 'moved', n: 1780 },
    { kind: 'projects', source: 'nfs-1', state: 'in_flight', n: 10 },
    { kind: 'projects', source: 'nfs-2', state: 'pending', n: 2370 },
    { kind: 'projects', source: 'nfs-2', state: 'quarantined', n: 2 },
    { kind: 'snippets', source: 'nfs-1', state: 'moved', n: 5 },
  ],
  retrying: [{ kind: 'projects', source: 'nfs-2', n: 3 }],
};
const cap = (c: Partial<CapData> & Pick<CapData, 'limit'>): CapData => ({
  cap: 0,
  ceiling: 10,
  paused: false,
  reason: '',
  ...c,
});
/** The room as a run before this wording recorded it: Prometheus's float and label set. */
const ROOM_RECORDED = cap({
  limit: 'rule',
  rule: 'capacity:gitaly-1',
  since: 0,
  reason:
    'rule capacity:gitaly-1: 4.847e+11 {instance="gitaly-1:9100", mountpoint="/var/opt/gitlab"} below 5.369e+11: no new move while it holds',
});
const CUT = cap({ limit: 'throttle', cap: 3, reason: 'API latency p90 2.1 s above throttle.latency_p90 1.5 s' });
const view = (over: Partial<ProgressView> = {}): ProgressView => ({
  step: 'drain nfs-1,nfs-2/projects,snippets,groups',
  summary,
  elapsedMs: 7_260_000,
  hold: null,
  perMinute: 22,
  ...over,
});
const at = (v: ProgressView, columns: number) => renderProgressLine(v, { width: columns - 1 });

describe('the progress line at 80 columns keeps counts, in flight and the reason before the label', () => {
  it('going at the plan cap', () => {
    const line = at(view(), 80);
    expect(line).toBe('1785/4167 done, 10 in flight, 3 retrying, 2 quarantined | 22/min, ETA 1h48m');
  });

  it('held by room: the room in GiB, not a float and a label set', () => {
    const line = at(view({ hold: holdOf(ROOM_RECORDED, NO_CONTROL) }), 80);
    expect(line).toBe('[2h01m] HELD (room): 451.4 GiB free < 500.0 GiB | 1785/4167 done, 10 in flight');
    expect(line).not.toMatch(/e\+|\{/);
  });

  it("under a throttle's cut: the cut's reason stays", () => {
    expect(at(view({ hold: holdOf(CUT, NO_CONTROL) }), 80)).toBe(
      'cap 3/10: API latency p90 2.1 s | 1785/4167 done, 10 in flight | ETA 1h48m',
    );
  });

  it('at 200 columns everything but the elapsed time and the per-kind counts, the label in words', () => {
    expect(at(view({ hold: holdOf(ROOM_RECORDED, NO_CONTROL) }), 200)).toBe(
      'drain projects, snippets, groups from nfs-1, nfs-2 | HELD: no room on gitaly-1: 451.4 GiB free, below keep_free 500.0 GiB | 1785/4167 done, 10 in flight, 3 retrying, 2 quarantined | ETA paused',
    );
    expect(at(view(), 200)).toBe(
      '[2h01m] drain projects, snippets, groups from nfs-1, nfs-2 | 1785/4167 done, 10 in flight, 3 retrying, 2 quarantined | 22 moves/min, ETA 1h48m | projects 1780/4162, snippets 5/5',
    );
  });

  it('in a pipe (no width): the whole line', () => {
    const line = renderProgressLine(view({ hold: holdOf(CUT, NO_CONTROL) }));
    expect(line).toBe(
      '[2h01m] drain projects, snippets, groups from nfs-1, nfs-2 | cap 3 of 10 (throttle): API latency p90 2.1 s above throttle.latency_p90 1.5 s | 1785/4167 done, 10 in flight, 3 retrying, 2 quarantined | 22 moves/min, ETA 1h48m | projects 1780/4162, snippets 5/5',
    );
  });

  it('from 60 columns up, the in-flight count and a hold stay on every screen', () => {
    for (const hold of [null, holdOf(ROOM_RECORDED, NO_CONTROL), holdOf(CUT, NO_CONTROL)])
      for (let columns = 60; columns <= 200; columns++) {
        const line = at(view({ hold }), columns);
        expect(textWidth(line), line).toBeLessThan(columns);
        expect(line, `${columns}`).toContain('10 in flight');
        if (hold) expect(line, `${columns}`).toMatch(/^(\[\w+\] )?(HELD|cap 3|drain|projects)/);
      }
  });
});

describe("the room's reason as the run records it", () => {
  it('is in bytes beside keep_free, without the PromQL label set', () => {
    const reason = describeRule({
      rule: 'capacity:gitaly-1',
      action: 'pause',
      status: 'holding',
      value: 484_700_000_000,
      labels: { instance: 'gitaly-1:9100', mountpoint: '/var/opt/gitlab' },
      op: 'below',
      bound: 536_900_000_000,
      since: 0,
      error: null,
    });
    expect(reason).toBe('rule capacity:gitaly-1: 451.4 GiB free, below keep_free 500.0 GiB');
  });
});

describe("the next step of a hold, with the run's own control command", () => {
  const named = { planFile: 'plans/retire nfs.yaml', statePath: 'state/r.db' };
  it('held by room: free space, or lower keep_free and stop the run with its own command', () => {
    const next = holdNextStep(holdOf(ROOM_RECORDED, NO_CONTROL)!, ROOM_RECORDED, named);
    expect(next).toBe(
      "free space on gitaly-1 (the run goes on by itself once it is above keep_free), or lower capacity.keep_free in the plan, stop the run (`shardmove control 'plans/retire nfs.yaml' --state state/r.db --stop`) and run it again with --accept-plan-change",
    );
    // The flag it prints is one control takes, alone.
    expect(parseControlChange({ stop: true, pause: false, unpause: false })).toEqual({ stop: true });
  });

  it('paused: the unpause, whole; nothing to do for a hold that ends by itself', () => {
    const pause = holdOf(null, { ...NO_CONTROL, paused: true, updatedAt: 1 })!;
    expect(holdNextStep(pause, null, named)).toBe(
      "`shardmove control 'plans/retire nfs.yaml' --state state/r.db --unpause` goes on",
    );
    expect(holdNextStep(holdOf(CUT, NO_CONTROL)!, CUT, named)).toBeNull();
  });
});
