/**
 * The turn planner as tables, for both schedules: what the drain loop sees and the time in, its
 * decision out. No store, no instance, no clock: each row is one situation of the loop (./loop.ts
 * only performs these).
 */
import { describe, expect, it } from 'vitest';
import { MAX_EXTRA_ROUNDS } from './result.js';
import { LISTINGS_AT_ONCE, nextPollAt, planLaunch, planSteps, planWait, postedEarly } from './turn.js';
import type { DrainView, Launch, PairView, Step, Wait } from './turn.js';

const NOW = 1_000_000;
const S = 1_000;

const pair = (over: Partial<PairView> = {}): PairView => ({
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

/** By kind: five slots, none taken, nothing pending, a poll cadence of 5 s anchored now, no queue ahead. */
const view = (over: Partial<DrainView> = {}): DrainView => ({
  schedule: 'by-kind',
  cap: 5,
  inFlight: 0,
  polling: false,
  partial: false,
  pairs: [pair()],
  queueAhead: { depth: 0, roundTripMs: null, ends: [] },
  poll: { intervalMs: 5 * S, minGapMs: 250, anchor: NOW, lastPollAt: null, earliestEnd: null },
  ...over,
});

const own = { pairs: [0], merge: false, list: false, take: true, restartsCadence: false };

describe('planLaunch by kind: what to launch this turn', () => {
  const rows: [string, DrainView, Launch][] = [
    ['paused with nothing in flight: no slot', view({ cap: 0 }), { early: 0, free: 0, offers: [] }],
    [
      'cap 0 with moves in flight: nothing early either, whatever is about to end',
      view({ cap: 0, inFlight: 3, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW + 100, NOW + 200] } }),
      { early: 0, free: -3, offers: [] },
    ],
    ['slots free: the own pair takes its due items first', view({ inFlight: 2 }), { early: 0, free: 3, offers: [own] }],
    [
      'nothing in flight: a launch restarts the poll cadence',
      view(),
      { early: 0, free: 5, offers: [{ ...own, restartsCadence: true }] },
    ],
    [
      'every slot taken, no queue ahead: nothing',
      view({ inFlight: 5, queueAhead: { depth: 0, roundTripMs: 700, ends: [NOW + 100] } }),
      { early: 0, free: 0, offers: [] },
    ],
    [
      'queue ahead: one early successor per move expected to end within the round trip',
      view({ inFlight: 5, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW + 500, NOW + 20 * S] } }),
      { early: 1, free: 1, offers: [own] },
    ],
    [
      'queue ahead: never more than move.queue_ahead beyond the cap',
      view({ inFlight: 5, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW, NOW + 100, NOW + 600] } }),
      { early: 2, free: 2, offers: [own] },
    ],
    [
      'queue ahead: nothing early before the round trip was measured',
      view({ inFlight: 5, queueAhead: { depth: 2, roundTripMs: null, ends: [NOW + 100] } }),
      { early: 0, free: 0, offers: [] },
    ],
    [
      'queue ahead: successors already posted early count against the allowance',
      view({ inFlight: 6, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW + 100, NOW + 200] } }),
      { early: 2, free: 1, offers: [own] },
    ],
    [
      'own listing still paging: the next drain waits for it',
      view({
        inFlight: 1,
        pairs: [pair({ phase: 'listing', listing: 'paging' }), pair({ phase: 'listing', listed: false })],
      }),
      { early: 0, free: 4, offers: [own] },
    ],
    [
      "own listing done: the next drain's listing starts and its items take what is left",
      view({
        inFlight: 1,
        pairs: [pair({ phase: 'listing', listing: 'done' }), pair({ phase: 'listing', listed: false })],
      }),
      {
        early: 0,
        free: 4,
        offers: [own, { pairs: [1], merge: false, list: true, take: true, restartsCadence: false }],
      },
    ],
    [
      "the next drain's listing already runs: not started again",
      view({ inFlight: 1, pairs: [pair(), pair({ phase: 'listing', listing: 'paging', listed: false })] }),
      {
        early: 0,
        free: 4,
        offers: [own, { pairs: [1], merge: false, list: false, take: true, restartsCadence: false }],
      },
    ],
    [
      'a partial drain: the next drain is listed, but takes nothing before it is wholly listed',
      view({ partial: true, inFlight: 1, pairs: [pair(), pair({ phase: 'listing', listed: false })] }),
      {
        early: 0,
        free: 4,
        offers: [own, { pairs: [1], merge: false, list: true, take: false, restartsCadence: false }],
      },
    ],
    [
      'a partial drain: the next drain wholly listed takes its items',
      view({ partial: true, inFlight: 1, pairs: [pair(), pair()] }),
      {
        early: 0,
        free: 4,
        offers: [own, { pairs: [1], merge: false, list: false, take: true, restartsCadence: false }],
      },
    ],
    [
      "verifying: the re-list runs, its own items wait; the next drain's take the slots",
      view({ inFlight: 0, pairs: [pair({ phase: 'verifying', listing: 'paging' }), pair()] }),
      { early: 0, free: 5, offers: [{ pairs: [1], merge: false, list: false, take: true, restartsCadence: false }] },
    ],
  ];
  it.each(rows)('%s', (_name, v, expected) => {
    expect(planLaunch(v, NOW)).toEqual(expected);
  });
});

describe('planWait by kind: how to wait once the launches are done', () => {
  const sleep = (until: number, more: Partial<Extract<Wait, { do: 'sleep' }>> = {}): Wait => ({
    do: 'sleep',
    until,
    page: null,
    pollEnds: false,
    poll: null,
    ...more,
  });
  const rows: [string, DrainView, number, Wait][] = [
    // The end conditions.
    ['alone, nothing pending or in flight: finished', view(), 5, { do: 'finish' }],
    [
      "with a next drain, own items all done: finished, the next drain's moves are its own to follow",
      view({ inFlight: 3, pairs: [pair(), pair({ posting: 1, open: 3 })] }),
      2,
      { do: 'finish' },
    ],
    [
      'with a next drain, an own move still open: not finished',
      view({ inFlight: 3, pairs: [pair({ open: 1 }), pair({ open: 2 })] }),
      2,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'with a next drain, an own batch still posting: not finished',
      view({ inFlight: 3, pairs: [pair({ posting: 1 }), pair()] }),
      2,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'verifying, the re-list done and nothing of its own posting: finished',
      view({ inFlight: 4, pairs: [pair({ phase: 'verifying', listing: 'done', nextDueAt: NOW }), pair()] }),
      1,
      { do: 'finish' },
    ],
    [
      'verifying, the re-list still paging: its next page wakes the loop before the poll',
      view({ inFlight: 4, pairs: [pair({ phase: 'verifying', listing: 'paging' }), pair()] }),
      1,
      sleep(NOW + 5 * S, { page: 0, poll: { at: NOW + 5 * S, await: false } }),
    ],
    [
      'verifying, the re-list done but an own batch still posting: not finished',
      view({ inFlight: 4, pairs: [pair({ phase: 'verifying', listing: 'done', posting: 1 }), pair()] }),
      1,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    // Nothing in flight.
    [
      'nothing in flight, the listing still paging: wait for its next page',
      view({ pairs: [pair({ phase: 'listing', listing: 'paging' })] }),
      5,
      { do: 'page', pair: 0 },
    ],
    [
      'paused with nothing in flight: look at the control again after a poll interval',
      view({ cap: 0, pairs: [pair({ nextDueAt: NOW - S })] }),
      0,
      sleep(NOW + 5 * S),
    ],
    [
      'only backoffs pending: sleep until the earliest retry, no poll',
      view({ pairs: [pair({ nextDueAt: NOW + 30 * S })] }),
      5,
      sleep(NOW + 30 * S),
    ],
    [
      "only backoffs pending, the next drain's ends first",
      view({ pairs: [pair({ nextDueAt: NOW + 30 * S }), pair({ nextDueAt: NOW + 8 * S })] }),
      5,
      sleep(NOW + 8 * S),
    ],
    [
      "only backoffs pending, the next drain's listing paging: its page wakes the loop sooner",
      view({
        pairs: [pair({ nextDueAt: NOW + 30 * S }), pair({ phase: 'listing', listing: 'paging', listed: false })],
      }),
      5,
      sleep(NOW + 30 * S, { page: 1 }),
    ],
    // Moves in flight: the poll.
    [
      'moves in flight, nothing else to wait for: poll at the cadence and wait for that poll',
      view({ inFlight: 5 }),
      0,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'cap 0 with moves in flight: they are followed, at the cadence',
      view({ cap: 0, inFlight: 2, pairs: [pair({ nextDueAt: NOW - S, open: 2 })] }),
      -2,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'a poll in flight: the next waits for its end (a poll interval at the latest)',
      view({ inFlight: 5, polling: true, poll: { ...view().poll, anchor: NOW - 4 * S } }),
      0,
      sleep(NOW + 5 * S, { pollEnds: true, poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'a poll due: the expected end of the earliest move brings it forward',
      view({ inFlight: 5, poll: { ...view().poll, lastPollAt: NOW - S, earliestEnd: NOW + 2 * S } }),
      0,
      sleep(NOW + 2 * S, { poll: { at: NOW + 2 * S, await: true } }),
    ],
    [
      'a poll due: never within poll.min_interval of the last',
      view({ inFlight: 5, poll: { ...view().poll, lastPollAt: NOW, earliestEnd: NOW - S } }),
      0,
      sleep(NOW + 250, { poll: { at: NOW + 250, await: true } }),
    ],
    [
      'a retry due before the poll, a slot free: wake for it; the poll runs beside the loop',
      view({ inFlight: 4, pairs: [pair({ open: 4, nextDueAt: NOW + 2 * S })] }),
      1,
      sleep(NOW + 2 * S, { poll: { at: NOW + 5 * S, await: false } }),
    ],
    [
      'a retry due, but every slot taken: not a reason to wake',
      view({ inFlight: 5, pairs: [pair({ open: 5, nextDueAt: NOW + 2 * S })] }),
      0,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'an item already due is no wake time (it could not be launched this turn)',
      view({ inFlight: 4, pairs: [pair({ open: 4, nextDueAt: NOW })] }),
      1,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'a page pending with moves in flight: it wakes the loop, the poll does not wait for it',
      view({ inFlight: 2, pairs: [pair({ phase: 'listing', listing: 'paging', open: 2 })] }),
      3,
      sleep(NOW + 5 * S, { page: 0, poll: { at: NOW + 5 * S, await: false } }),
    ],
    [
      'a page pending, every slot taken: no reason to wake for it',
      view({ inFlight: 5, pairs: [pair({ phase: 'listing', listing: 'paging', open: 5 })] }),
      0,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'queue ahead: slots free, so nothing is due and no early successor is waited for',
      view({ inFlight: 4, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW + 3 * S, NOW + 9 * S] } }),
      1,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
    [
      'queue ahead: every slot taken, wake when the next move comes within the round trip of its end',
      view({ inFlight: 5, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW + 3 * S, NOW + 9 * S] } }),
      0,
      sleep(NOW + 3 * S - 700, { poll: { at: NOW + 5 * S, await: false } }),
    ],
    [
      'queue ahead: the allowance full, no early wake',
      view({ inFlight: 7, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW + 100, NOW + 200, NOW + 3 * S] } }),
      0,
      sleep(NOW + 5 * S, { poll: { at: NOW + 5 * S, await: true } }),
    ],
  ];
  it.each(rows)('%s', (_name, v, free, expected) => {
    expect(planWait(v, NOW, free)).toEqual(expected);
  });
});

/** The one schedule (`move.order: together`): every pair served at once, each one stepped through its phases. */
const tview = (over: Partial<DrainView> = {}): DrainView => view({ schedule: 'together', ...over });

/** The one schedule's launch: one offer of the pairs `take`, merged into the one order. */
const merged = (early: number, free: number, take: number[], restartsCadence: boolean): Launch => ({
  early,
  free,
  offers: take.length === 0 ? [] : [{ pairs: take, merge: true, list: false, take: true, restartsCadence }],
});

const busy = pair({ nextDueAt: NOW, open: 2, remaining: 10 });

describe("planSteps by kind: the phases are the caller's", () => {
  it('steps nothing', () =>
    expect(planSteps(view({ pairs: [pair({ phase: 'listing', listing: 'done' }), pair()] }))).toEqual([]));
});

describe('planSteps together: what changes for each pair', () => {
  const rows: [string, DrainView, Step[]][] = [
    ['a pair moving with items left: nothing changes', tview({ pairs: [busy] }), []],
    [
      'first listings start in order, a few at once',
      tview({
        pairs: Array.from({ length: LISTINGS_AT_ONCE + 2 }, () => pair({ phase: 'listing', listed: false })),
      }),
      Array.from({ length: LISTINGS_AT_ONCE }, (_, i): Step => ({ pair: i, do: 'list' })),
    ],
    [
      'a listing paging counts against the few at once',
      tview({
        pairs: [
          pair({ phase: 'listing', listing: 'paging', listed: false }),
          ...Array.from({ length: LISTINGS_AT_ONCE }, () => pair({ phase: 'listing', listed: false })),
        ],
      }),
      Array.from({ length: LISTINGS_AT_ONCE - 1 }, (_, i): Step => ({ pair: i + 1, do: 'list' })),
    ],
    [
      'a pair wholly listed before (a resume) moves without listing again',
      tview({ pairs: [pair({ phase: 'listing', listed: true })] }),
      [{ pair: 0, do: 'move' }],
    ],
    [
      'a first listing done: the pair moves',
      tview({ pairs: [pair({ phase: 'listing', listing: 'done', nextDueAt: NOW })] }),
      [{ pair: 0, do: 'move' }],
    ],
    [
      "a pair's last item ended while others still move: its own verification starts",
      tview({ pairs: [busy, pair({ remaining: 0 })], inFlight: 2 }),
      [{ pair: 1, do: 'verify' }],
    ],
    [
      'a pair with a retry waiting out its backoff is not done',
      tview({ pairs: [pair({ nextDueAt: NOW + 30 * S, remaining: 1 })] }),
      [],
    ],
    ['a pair with POSTs unanswered is not done', tview({ pairs: [pair({ posting: 1, remaining: 1 })] }), []],
    [
      'out of verification rounds: the pair ends with what it has',
      tview({ pairs: [pair({ rounds: MAX_EXTRA_ROUNDS, remaining: 1 })] }),
      [{ pair: 0, do: 'finish' }],
    ],
    [
      'a verification still paging: nothing yet',
      tview({ pairs: [pair({ phase: 'verifying', listing: 'paging' })] }),
      [],
    ],
    [
      'a verification that found nothing left: the pair is done',
      tview({ pairs: [pair({ phase: 'verifying', listing: 'done', remaining: 0 })] }),
      [{ pair: 0, do: 'finish' }],
    ],
    [
      'a verification that sent items back to pending: the pair moves again',
      tview({ pairs: [pair({ phase: 'verifying', listing: 'done', remaining: 2, nextDueAt: NOW })] }),
      [{ pair: 0, do: 'move' }],
    ],
    [
      'a reached bound leaves unplaced items on purpose: done once nothing placed is open',
      tview({ pairs: [pair({ phase: 'verifying', listing: 'done', remaining: 7, bounded: true })] }),
      [{ pair: 0, do: 'finish' }],
    ],
    ['a done pair stays done', tview({ pairs: [pair({ phase: 'done' })] }), []],
  ];
  it.each(rows)('%s', (_, v, steps) => expect(planSteps(v)).toEqual(steps));
});

describe('planLaunch together: the free slots and who takes them, in one order', () => {
  const rows: [string, DrainView, Launch][] = [
    [
      'every pair listed or moving is offered; verifying and done ones are not',
      tview({
        inFlight: 2,
        pairs: [
          pair({ phase: 'listing', listing: 'paging', listed: false }),
          pair(),
          pair({ phase: 'verifying', listing: 'paging' }),
          pair({ phase: 'done' }),
          pair({ phase: 'listing', listed: false }),
        ],
      }),
      merged(0, 3, [0, 1], false),
    ],
    [
      "a partial drain's pair takes nothing before its source is wholly listed",
      tview({ partial: true, pairs: [pair({ phase: 'listing', listing: 'paging', listed: false }), pair()] }),
      merged(0, 5, [1], true),
    ],
    ['paused: no slot', tview({ cap: 0 }), merged(0, 0, [], true)],
    [
      'queue ahead: one early successor per move expected to end within the round trip',
      tview({ inFlight: 5, queueAhead: { depth: 2, roundTripMs: 700, ends: [NOW + 500, NOW + 20 * S] } }),
      merged(1, 1, [0], false),
    ],
  ];
  it.each(rows)('%s', (_, v, launch) => expect(planLaunch(v, NOW)).toEqual(launch));
});

describe('planWait together: how the loop waits', () => {
  const rows: [string, DrainView, number, Wait][] = [
    [
      'every pair done: finish',
      tview({ pairs: [pair({ phase: 'done' }), pair({ phase: 'done' })] }),
      5,
      { do: 'finish' },
    ],
    [
      "a pair's phase can change: look again at once",
      tview({ pairs: [pair({ phase: 'verifying', listing: 'done' })] }),
      5,
      { do: 'again' },
    ],
    [
      'nothing in flight, a listing paging: wait for its page',
      tview({ pairs: [pair({ phase: 'done' }), pair({ phase: 'listing', listing: 'paging', listed: false })] }),
      5,
      { do: 'page', pair: 1 },
    ],
    [
      'nothing in flight, only a retry waiting out its backoff: sleep until it is due',
      tview({ pairs: [pair({ nextDueAt: NOW + 30 * S, remaining: 1 })] }),
      5,
      { do: 'sleep', until: NOW + 30 * S, page: null, pollEnds: false, poll: null },
    ],
    [
      'moves in flight: sleep until the next poll, and poll',
      tview({ inFlight: 5, pairs: [busy] }),
      0,
      { do: 'sleep', until: NOW + 5 * S, page: null, pollEnds: false, poll: { at: NOW + 5 * S, await: true } },
    ],
    [
      "moves in flight and free slots: a listing's next page wakes the loop sooner",
      tview({ inFlight: 2, pairs: [busy, pair({ phase: 'listing', listing: 'paging', listed: false })] }),
      3,
      { do: 'sleep', until: NOW + 5 * S, page: 1, pollEnds: false, poll: { at: NOW + 5 * S, await: false } },
    ],
    [
      "free slots and a retry due before the poll: the retry's time",
      tview({ inFlight: 2, pairs: [pair({ nextDueAt: NOW + 2 * S, open: 2, remaining: 3 })] }),
      3,
      { do: 'sleep', until: NOW + 2 * S, page: null, pollEnds: false, poll: { at: NOW + 5 * S, await: false } },
    ],
  ];
  it.each(rows)('%s', (_, v, free, wait) => expect(planWait(v, NOW, free)).toEqual(wait));
});

describe('postedEarly: the moves a turn posted beyond the cap', () => {
  const launch = (early: number): Launch => ({ early, free: 0, offers: [] });
  const rows: [string, number, Launch, number, number, { items: number; beyond: number } | null][] = [
    ['no allowance: none', 3, launch(0), 3, 4, null],
    ['up to the cap only: none', 3, launch(2), 1, 3, null],
    ['two beyond the cap', 3, launch(2), 3, 5, { items: 2, beyond: 2 }],
    ['one more beyond the cap than before', 3, launch(2), 4, 5, { items: 1, beyond: 2 }],
    ['fewer in flight than before: none', 3, launch(2), 5, 4, null],
  ];
  it.each(rows)('%s', (_name, cap, l, before, after, expected) => {
    expect(postedEarly(cap, l, before, after)).toEqual(expected);
  });
});

describe('nextPollAt: the poll cadence', () => {
  const poll = view().poll;
  const rows: [string, DrainView['poll'], number][] = [
    ['nothing predicted: poll.interval after the anchor', poll, NOW + 5 * S],
    ['an expected end sooner: then', { ...poll, lastPollAt: NOW - S, earliestEnd: NOW + S }, NOW + S],
    ['an expected end later than the interval: the interval', { ...poll, earliestEnd: NOW + 60 * S }, NOW + 5 * S],
    [
      'an expected end within min_interval of the last poll: min_interval',
      { ...poll, lastPollAt: NOW, earliestEnd: NOW },
      NOW + 250,
    ],
  ];
  it.each(rows)('%s', (_name, p, expected) => {
    expect(nextPollAt(p)).toBe(expected);
  });
});
