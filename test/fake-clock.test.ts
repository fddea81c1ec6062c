/**
 * The clock that owns every timer: the simulated one the tests run on (test/support/fake-clock.ts)
 * fires timers in time order, ties in the order they were made, and its sleep is one of its timers;
 * the real one (src/shared/clock.ts) keeps Node's semantics, unref included.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from './support/fake-clock.js';
import { sleepOn, systemClock } from '../src/shared/clock.js';
import type { Clock } from '../src/shared/clock.js';

const T0 = 1_000_000;

/** A script of timers set on a fresh clock at T0, recording `name@elapsed` as each fires. */
type Script = (clock: FakeClock, fired: string[]) => void;
const at = (clock: Clock, fired: string[], name: string) => () => void fired.push(`${name}@${clock.now() - T0}`);

const cases: { what: string; script: Script; advance: number; fired: string[]; pending: number }[] = [
  {
    what: 'timeouts fire in time order, not in the order they were set',
    script: (c, f) => {
      c.setTimeout(at(c, f, 'c'), 30);
      c.setTimeout(at(c, f, 'a'), 10);
      c.setTimeout(at(c, f, 'b'), 20);
    },
    advance: 100,
    fired: ['a@10', 'b@20', 'c@30'],
    pending: 0,
  },
  {
    what: 'timers due at one instant fire in the order they were made',
    script: (c, f) => {
      for (const name of ['first', 'second', 'third']) c.setTimeout(at(c, f, name), 10);
    },
    advance: 10,
    fired: ['first@10', 'second@10', 'third@10'],
    pending: 0,
  },
  {
    what: 'only what is due by the new time fires; the rest waits',
    script: (c, f) => {
      c.setTimeout(at(c, f, 'soon'), 10);
      c.setTimeout(at(c, f, 'later'), 11);
    },
    advance: 10,
    fired: ['soon@10'],
    pending: 1,
  },
  {
    what: 'a cleared timeout never fires; clearing twice, or null, is harmless',
    script: (c, f) => {
      const t = c.setTimeout(at(c, f, 'cleared'), 10);
      c.setTimeout(at(c, f, 'kept'), 20);
      c.clearTimeout(t);
      c.clearTimeout(t);
      c.clearTimeout(null);
      c.clearTimeout(undefined);
    },
    advance: 100,
    fired: ['kept@20'],
    pending: 0,
  },
  {
    what: 'an interval fires every period until cleared, and keeps its place in a tie',
    script: (c, f) => {
      c.setInterval(at(c, f, 'tick'), 10);
      c.setTimeout(at(c, f, 'timeout'), 20);
    },
    advance: 30,
    fired: ['tick@10', 'tick@20', 'timeout@20', 'tick@30'],
    pending: 1,
  },
  {
    what: 'an interval cleared from its own callback fires no more',
    script: (c, f) => {
      let n = 0;
      const t = c.setInterval(() => {
        at(c, f, `tick${++n}`)();
        if (n === 2) c.clearInterval(t);
      }, 5);
    },
    advance: 100,
    fired: ['tick1@5', 'tick2@10'],
    pending: 0,
  },
  {
    what: 'a timer set from a callback fires in the same advance when due by its end',
    script: (c, f) => {
      c.setTimeout(() => {
        at(c, f, 'outer')();
        c.setTimeout(at(c, f, 'inner'), 5);
      }, 10);
    },
    advance: 15,
    fired: ['outer@10', 'inner@15'],
    pending: 0,
  },
  {
    what: 'a zero or negative delay fires at the current time; a zero interval runs every 1 ms',
    script: (c, f) => {
      c.setTimeout(at(c, f, 'zero'), 0);
      c.setTimeout(at(c, f, 'negative'), -50);
      const t = c.setInterval(() => {
        at(c, f, 'every')();
        if (c.now() - T0 >= 2) c.clearInterval(t);
      }, 0);
    },
    advance: 10,
    fired: ['zero@0', 'negative@0', 'every@1', 'every@2'],
    pending: 0,
  },
  {
    what: 'a sleep is a timer: it resolves in its place among the others',
    script: (c, f) => {
      c.setTimeout(at(c, f, 'before'), 10);
      void c.sleep(10).then(at(c, f, 'sleep'));
      c.setTimeout(at(c, f, 'after'), 10);
    },
    advance: 10,
    fired: ['before@10', 'sleep@10', 'after@10'],
    pending: 0,
  },
];

describe('the simulated clock', () => {
  it.each(cases)('$what', async ({ script, advance, fired, pending }) => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const got: string[] = [];
    script(clock, got);
    await clock.advanceAsync(advance);
    expect(got).toEqual(fired);
    expect(clock.timerCount).toBe(pending);
    expect(clock.now()).toBe(T0 + advance);
  });

  it('advance fires the same timers at once, and never moves time back', () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const got: string[] = [];
    clock.setTimeout(at(clock, got, 'b'), 20);
    clock.setTimeout(at(clock, got, 'a'), 10);
    clock.advance(25);
    expect(got).toEqual(['a@10', 'b@20']);
    clock.advance(-5);
    expect(clock.now()).toBe(T0 + 25);
  });

  it('a sleep ends when time passes its end, not before; an abort ends it at once and drops its timer', async () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    let done = false;
    const slept = clock.sleep(1_000).then(() => (done = true));
    await clock.advanceAsync(999);
    expect(done).toBe(false);
    await clock.advanceAsync(1);
    await slept;
    expect(done).toBe(true);

    const ac = new AbortController();
    const aborted = clock.sleep(1_000, ac.signal);
    expect(clock.timerCount).toBe(1);
    ac.abort(new Error('interrupted'));
    await expect(aborted).rejects.toThrow('interrupted');
    expect(clock.timerCount).toBe(0);
    await expect(clock.sleep(5, ac.signal)).rejects.toThrow('interrupted');
    expect(clock.timerCount).toBe(0);
  });

  it('auto-advance (the default): a sleep moves time to its end, firing what falls due on the way', async () => {
    const clock = new FakeClock(T0);
    const got: string[] = [];
    clock.setInterval(at(clock, got, 'renew'), 400);
    await clock.sleep(1_000);
    expect(clock.now()).toBe(T0 + 1_000);
    expect(got).toEqual(['renew@400', 'renew@800']);
  });

  it('runAll fires until nothing is pending, time jumping from one timer to the next', async () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const got: string[] = [];
    clock.setTimeout(at(clock, got, 'day'), 86_400_000);
    clock.setTimeout(at(clock, got, 'hour'), 3_600_000);
    expect(clock.nextDue()).toBe(T0 + 3_600_000);
    await clock.runAll();
    expect(got).toEqual(['hour@3600000', 'day@86400000']);
    expect(clock.nextDue()).toBeNull();
  });

  it('unref and ref only mark the handle: a simulated clock keeps no process alive', () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const t = clock.setTimeout(() => undefined, 10);
    expect(t.hasRef()).toBe(true);
    expect(t.unref().hasRef()).toBe(false);
    expect(t.ref().hasRef()).toBe(true);
  });
});

describe('the real clock', () => {
  it("hands out Node's own handles, so unref lets the process exit as Node's do", () => {
    const t = systemClock.setTimeout(() => undefined, 60_000);
    try {
      expect(t.unref().hasRef()).toBe(false);
    } finally {
      systemClock.clearTimeout(t);
    }
    const i = systemClock.setInterval(() => undefined, 60_000);
    expect(i.hasRef()).toBe(true);
    systemClock.clearInterval(i);
  });

  it('sleeps on its own timers and ends the sleep with the signal', async () => {
    await systemClock.sleep(1);
    const ac = new AbortController();
    const slept = systemClock.sleep(60_000, ac.signal);
    ac.abort(new Error('stop'));
    await expect(slept).rejects.toThrow('stop');
  });

  it('sleepOn uses exactly the timers it is given', async () => {
    const clock = new FakeClock(T0, { autoAdvance: false });
    const slept = sleepOn(clock, 50);
    expect(clock.timerCount).toBe(1);
    await clock.advanceAsync(50);
    await slept;
    expect(clock.now()).toBe(T0 + 50);
  });
});
