/**
 * The one schedule's planner as tables: what the loop sees and the time in, its decision out
 * (./together-loop.ts only performs these).
 */
import { describe, expect, it } from 'vitest';
import { MAX_EXTRA_ROUNDS } from './result.js';
import { LISTINGS_AT_ONCE, planScheduleLaunch, planScheduleWait, planSteps } from './schedule-turn.js';
import type { ScheduleLaunch, SchedulePairView, ScheduleView, Step } from './schedule-turn.js';
import type { Wait } from './turn.js';

const NOW = 1_000_000;
const S = 1_000;

const pair = (over: Partial<SchedulePairView> = {}): SchedulePairView => ({
  phase: 'moving',
  listing: 'none',
  listed: true,
  nextDueAt: null,
  open: 0,
  posting: 0,
  rounds: 0,
  remaining: 0,
  bounded: false,
  ...over,
});

/** Five slots, none taken, a poll cadence of 5 s anchored now, no queue ahead. */
const view = (over: Partial<ScheduleView> = {}): ScheduleView => ({
  cap: 5,
  inFlight: 0,
  polling: false,
  partial: false,
  pairs: [pair()],
  queueAhead: { depth: 0, roundTripMs: null, ends: [] },
  poll: { intervalMs: 5 * S, minGapMs: 250, anchor: NOW, lastPollAt: null, earliestEnd: null },
  ...over,
});

const busy = pair({ nextDueAt: NOW, open: 2, remaining: 10 });

describe('planSteps: what changes for each pair', () => {
  const rows: [string, ScheduleView, Step[]][] = [
    ['a pair moving with items left: nothing changes', view({ pairs: [busy] }), []],
    [
      'first listings start in order, a few at once',
      view({
        pairs: Array.from({ length: LISTINGS_AT_ONCE + 2 }, () => pair({ phase: 'listing', listed: false })),
      }),
      Array.from({ length: LISTINGS_AT_ONCE }, (_, i): Step => ({ pair: i, do: 'list' })),
    ],
    [
      'a listing paging counts against the few at once',
      view({
        pairs: [
          pair({ phase: 'listing', listing: 'paging', listed: false }),
          ...Array.from({ length: LISTINGS_AT_ONCE }, () => pair({ phase: 'listing', listed: false })),
        ],
      }),
      Array.from({ length: LISTINGS_AT_ONCE - 1 }, (_, i): Step => ({ pair: i + 1, do: 'list' })),
    ],
    [
      'a pair wholly listed before (a resume) moves without listing again',
      view({ pairs: [pair({ phase: 'listing', listed: true })] }),
      [{ pair: 0, do: 'move' }],
    ],
    [
      'a first listing done: the pair moves',
      view({ pairs: [pair({ phase: 'listing', listing: 'done', nextDueAt: NOW })] }),
      [{ pair: 0, do: 'move' }],
    ],
    [
      "a pair's last item ended while others still move: its own verification starts",
      view({ pairs: [busy, pair({ remaining: 0 })], inFlight: 2 }),
      [{ pair: 1, do: 'verify' }],
    ],
    [
      'a pair with a retry waiting out its backoff is not done',
      view({ pairs: [pair({ nextDueAt: NOW + 30 * S, remaining: 1 })] }),
      [],
    ],
    ['a pair with POSTs unanswered is not done', view({ pairs: [pair({ posting: 1, remaining: 1 })] }), []],
    [
      'out of verification rounds: the pair ends with what it has',
      view({ pairs: [pair({ rounds: MAX_EXTRA_ROUNDS, remaining: 1 })] }),
      [{ pair: 0, do: 'finish' }],
    ],
    [
      'a verification still paging: nothing yet',
      view({ pairs: [pair({ phase: 'verifying', listing: 'paging' })] }),
      [],
    ],
    [
      'a verification that found nothing left: the pair is done',
      view({ pairs: [pair({ phase: 'verifying', listing: 'done', remaining: 0 })] }),
      [{ pair: 0, do: 'finish' }],
    ],
    [
      'a verification that sent items back to pending: the pair moves again',
      view({ pairs: [pair({ phase: 'verifying', listing: 'done', remaining: 2, nextDueAt: NOW })] }),
      [{ pair: 0, do: 'move' }],
    ],
    [
      'a reached bound leaves unplaced items on purpose: done once nothing placed is open',
      view({ pairs: [pair({ phase: 'verifying', listing: 'done', remaining: 7, bounded: true })] }),
      [{ pair: 0, do: 'finish' }],
    ],
    ['a done pair stays done', view({ pairs: [pair({ phase: 'done' })] }), []],
  ];
  it.each(rows)('%s', (_, v, steps) => expect(planSteps(v)).toEqual(steps));
});

describe('planScheduleLaunch: the free slots and who takes them', () => {
  const rows: [string, ScheduleView, ScheduleLaunch][] = [
    [
      'every pair listed or moving is offered; verifying and done ones are not',
      view({
        inFlight: 2,
        pairs: [
          pair({ phase: 'listing', listing: 'paging', listed: false }),
          pair(),
          pair({ phase: 'verifying', listing: 'paging' }),
          pair({ phase: 'done' }),
          pair({ phase: 'listing', listed: false }),
        ],
      }),
      { early: 0, free: 3, take: [0, 1], restartsCadence: false },
    ],
    [
      "a partial drain's pair takes nothing before its source is wholly listed",
      view({ partial: true, pairs: [pair({ phase: 'listing', listing: 'paging', listed: false }), pair()] }),
      { early: 0, free: 5, take: [1], restartsCadence: true },
    ],
    ['paused: no slot', view({ cap: 0 }), { early: 0, free: 0, take: [], restartsCadence: true }],
    [
      'queue ahead: one early successor per move expected to end within the round trip',
      view({ inFlight: 5, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW + 500, NOW + 20 * S] } }),
      { early: 1, free: 1, take: [0], restartsCadence: false },
    ],
  ];
  it.each(rows)('%s', (_, v, launch) => expect(planScheduleLaunch(v, NOW)).toEqual(launch));
});

describe('planScheduleWait: how the loop waits', () => {
  const rows: [string, ScheduleView, number, Wait | { do: 'again' }][] = [
    [
      'every pair done: finish',
      view({ pairs: [pair({ phase: 'done' }), pair({ phase: 'done' })] }),
      5,
      { do: 'finish' },
    ],
    [
      "a pair's phase can change: look again at once",
      view({ pairs: [pair({ phase: 'verifying', listing: 'done' })] }),
      5,
      { do: 'again' },
    ],
    [
      'nothing in flight, a listing paging: wait for its page',
      view({ pairs: [pair({ phase: 'done' }), pair({ phase: 'listing', listing: 'paging', listed: false })] }),
      5,
      { do: 'page', pair: 1 },
    ],
    [
      'nothing in flight, only a retry waiting out its backoff: sleep until it is due',
      view({ pairs: [pair({ nextDueAt: NOW + 30 * S, remaining: 1 })] }),
      5,
      { do: 'sleep', until: NOW + 30 * S, page: null, pollEnds: false, poll: null },
    ],
    [
      'moves in flight: sleep until the next poll, and poll',
      view({ inFlight: 5, pairs: [busy] }),
      0,
      { do: 'sleep', until: NOW + 5 * S, page: null, pollEnds: false, poll: { at: NOW + 5 * S, await: true } },
    ],
    [
      "moves in flight and free slots: a listing's next page wakes the loop sooner",
      view({ inFlight: 2, pairs: [busy, pair({ phase: 'listing', listing: 'paging', listed: false })] }),
      3,
      { do: 'sleep', until: NOW + 5 * S, page: 1, pollEnds: false, poll: { at: NOW + 5 * S, await: false } },
    ],
    [
      "free slots and a retry due before the poll: the retry's time",
      view({ inFlight: 2, pairs: [pair({ nextDueAt: NOW + 2 * S, open: 2, remaining: 3 })] }),
      3,
      { do: 'sleep', until: NOW + 2 * S, page: null, pollEnds: false, poll: { at: NOW + 5 * S, await: false } },
    ],
  ];
  it.each(rows)('%s', (_, v, free, wait) => expect(planScheduleWait(v, NOW, free)).toEqual(wait));
});
