/** Builds ActorDeps around the fake instance, a fake clock and an in-memory checkpoint. */
import { pino } from 'pino';
import type { ActorDeps } from '../../src/actors/types.js';
import type { Kind, Plan } from '../../src/plan/types.js';
import { openCheckpoint } from '../../src/store/checkpoint.js';
import { FakeClock } from './fake-clock.js';
import { FakeInstance } from './fake-instance.js';
import type { FakeOptions } from './fake-instance.js';

export function testPlan(
  over: { move?: Partial<Plan['move']>; retry?: Partial<Plan['retry']>; poll?: Partial<Plan['poll']> } = {},
): Plan {
  return {
    version: 1,
    name: 'test',
    instance: {
      url: 'http://fake',
      credentials: { type: 'token', token: 'x' },
      sudo: null,
      timeoutMs: 1000,
      outageWaitMs: 1_800_000,
    },
    move: {
      from: ['nfs-1'],
      to: ['cluster'],
      kinds: ['projects', 'snippets', 'groups'] as Kind[],
      mode: 'throttled',
      concurrency: 10,
      queueAhead: 0,
      ...over.move,
    },
    weights: { cluster: 100, 'nfs-1': 0 },
    poll: {
      intervalMs: 5000,
      minIntervalMs: 250,
      stuckScheduledAfterMs: 86_400_000,
      stuckRunningAfterMs: 3_600_000,
      stuckRunningPerGbMs: 1_800_000,
      ...over.poll,
    },
    retry: { maxAttempts: 3, backoffMs: 30_000, ...over.retry },
    verify: true,
    geo: { resync: false },
  };
}

export interface Harness {
  deps: ActorDeps;
  fake: FakeInstance;
  clock: FakeClock;
  store: ReturnType<typeof openCheckpoint>;
  abort: AbortController;
}

export function createHarness(
  plan: Plan = testPlan(),
  fakeOpts: Partial<FakeOptions> = {},
  file = ':memory:',
): Harness {
  const clock = new FakeClock();
  const fake = new FakeInstance({ clock, ...fakeOpts });
  const store = openCheckpoint(file);
  const abort = new AbortController();
  const deps: ActorDeps = {
    api: fake,
    store,
    plan,
    clock,
    log: pino({ level: 'silent' }),
    signal: abort.signal,
    dryRun: false,
  };
  return { deps, fake, clock, store, abort };
}

/** Same instance and store, a fresh signal: what `run` again after an interrupt looks like. */
export function resumed(h: Harness): Harness {
  const abort = new AbortController();
  return { ...h, abort, deps: { ...h.deps, signal: abort.signal } };
}

/** Aborts the drain (as SIGINT or SIGTERM would) at the `n`th request named `name` to the instance. */
export function abortAt(h: Harness, name: string, n: number, reason: string): void {
  let seen = 0;
  h.fake.onRequest = (req) => {
    if (req === name && ++seen === n) h.abort.abort(new Error(reason));
  };
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/**
 * The harness with some instance calls taking time on the fake clock (`{ listMoves: 400 }`, or a
 * function of the call's arguments; a listing's per page): the
 * fake answers at once, which makes round trips and listings instantaneous otherwise.
 */
export function withDelays(
  h: Harness,
  delays: Partial<Record<keyof ActorDeps['api'], number | ((...args: unknown[]) => number)>>,
): Harness {
  const api = h.deps.api;
  const proxy = new Proxy(api, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      const fn = v as (...a: unknown[]) => unknown;
      const delay = delays[prop as keyof ActorDeps['api']];
      if (delay === undefined) return fn.bind(target);
      const after = (args: unknown[]) => (typeof delay === 'number' ? delay : delay(...args));
      // A listing is delayed page by page.
      if (prop === 'listItemsOnStorage') {
        return async function* (...args: unknown[]) {
          for await (const page of fn.apply(target, args) as AsyncIterable<unknown>) {
            await h.clock.sleep(after(args));
            yield page;
          }
        };
      }
      return async (...args: unknown[]) => {
        await h.clock.sleep(after(args));
        return fn.apply(target, args);
      };
    },
  });
  return { ...h, deps: { ...h.deps, api: proxy } };
}
