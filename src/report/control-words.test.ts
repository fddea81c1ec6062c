import { describe, expect, it } from 'vitest';
import { NO_CONTROL } from '../store/types.js';
import type { RunControl } from '../store/types.js';
import { describeChange, describeInForce } from './control-words.js';
import type { ControlChangeAsked } from './control-words.js';

const BREAKER =
  'paused by the failure breaker: 20 moves failed within 15m (retry.pause_after); each with ... shardmove status';
const c = (over: Partial<RunControl> = {}): RunControl => ({ ...NO_CONTROL, ...over });
const view = (over: Partial<RunControl> = {}, planConcurrency: number | null = 10) => ({ ...c(over), planConcurrency });

describe('control in words: what it did', () => {
  it.each<[string, ControlChangeAsked, RunControl, ReturnType<typeof view>, string]>([
    [
      '--pause',
      { paused: true },
      c(),
      view({ paused: true }),
      "paused: no new moves; the moves in flight are followed to their end; once unpaused: cap 10, the plan's",
    ],
    [
      '--pause again',
      { paused: true },
      c({ paused: true }),
      view({ paused: true }),
      "paused (it already was): no new moves; the moves in flight are followed to their end; once unpaused: cap 10, the plan's",
    ],
    [
      "--pause over the breaker's",
      { paused: true },
      c({ paused: true, pausedBy: BREAKER }),
      view({ paused: true }),
      "paused, now by you (it was the failure breaker's pause, which an unpause ends just the same): no new moves; the moves in flight are followed to their end; once unpaused: cap 10, the plan's",
    ],
    ['--unpause', { paused: false }, c({ paused: true }), view(), "unpaused: cap back to the plan's 10"],
    [
      '--unpause under an override',
      { paused: false },
      c({ paused: true, concurrency: 4 }),
      view({ concurrency: 4 }),
      "unpaused: cap 4, set with shardmove control (the plan's is 10)",
    ],
    [
      '--unpause --concurrency 3',
      { paused: false, concurrency: 3 },
      c({ paused: true }),
      view({ concurrency: 3 }),
      "unpaused: cap 3 (the plan's is 10)",
    ],
    ['--unpause, not paused', { paused: false }, c(), view(), "not paused, nothing to unpause; cap 10, the plan's"],
    ['--concurrency 4', { concurrency: 4 }, c(), view({ concurrency: 4 }), "cap 4 from now on (the plan's is 10)"],
    [
      '--concurrency 4 while paused',
      { concurrency: 4 },
      c({ paused: true }),
      view({ concurrency: 4, paused: true }),
      "cap 4 (the plan's is 10) once unpaused; still paused",
    ],
    ['--concurrency plan', { concurrency: null }, c({ concurrency: 4 }), view(), "cap back to the plan's 10"],
    ['nothing', {}, c(), view(), "in force: cap 10, the plan's"],
    ['nothing, the plan unknown', {}, c(), view({}, null), "in force: cap the plan's"],
    [
      '--concurrency plan, the plan unknown',
      { concurrency: null },
      c({ concurrency: 4 }),
      view({}, null),
      "cap back to the plan's",
    ],
  ])('%s', (_what, change, before, after, said) => {
    expect(describeChange(change, before, after)).toBe(said);
    expect(said).not.toMatch(/concurrency the plan's|plan: the plan's/);
  });

  it('says who paused a run', () => {
    expect(describeInForce(view({ paused: true, pausedBy: BREAKER }))).toBe(
      "paused by the failure breaker (20 moves failed within 15m): no new moves; the moves in flight are followed to their end; once unpaused: cap 10, the plan's",
    );
  });
});

describe('control in words under move.concurrency: auto', () => {
  const auto = (over: Partial<RunControl> = {}) => ({ ...c(over), planConcurrency: null, planAuto: true });
  it.each<[string, ControlChangeAsked, RunControl, ReturnType<typeof auto>, string]>([
    ['--concurrency 6', { concurrency: 6 }, c(), auto({ concurrency: 6 }), "cap 6 from now on (the plan's is auto)"],
    [
      '--concurrency auto',
      { concurrency: null },
      c({ concurrency: 6 }),
      auto(),
      "cap back to the plan's move.concurrency: auto (its limiter decides again)",
    ],
    [
      '--pause',
      { paused: true },
      c(),
      auto({ paused: true }),
      "paused: no new moves; the moves in flight are followed to their end; once unpaused: cap chosen by the plan's move.concurrency: auto",
    ],
  ])('%s', (_name, change, before, after, words) => {
    expect(describeChange(change, before, after)).toBe(words);
  });

  it('says what is in force', () => {
    expect(describeInForce(auto())).toBe("cap chosen by the plan's move.concurrency: auto");
    expect(describeInForce(auto({ concurrency: 6 }))).toBe("cap 6, set with shardmove control (the plan's is auto)");
  });
});
