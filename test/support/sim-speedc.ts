/**
 * The held sandbox (./held-sandbox.ts) on the in-process harness (./sim-harness.ts): the
 * orchestrator and the sandbox in this process on one simulated clock that only the test moves
 * (`autoAdvance` off). A move takes HELD_MOVE_MS of that clock (or `opts.moveMs`), so the moves a
 * run starts stay in flight until the test moves the clock past them: "what was in flight when X
 * happened" is built, not waited for, and letting them go costs no real time.
 *
 * The test drives the run's own waits: `stepUntil` moves the clock a poll at a time (never near a
 * move's end) until what it reads holds; `letGo` and `pumpUntil` move it past the moves in flight.
 */
import { rmSync } from 'node:fs';
import { onTestFinished } from 'vitest';
import type { SandboxOptions } from '../../src/sandbox/index.js';
import type { SandboxMove } from './cli-harness.js';
import { ADMIN_TOKEN, movesOf, sandboxEnv, tempDir, writeSeed } from './cli-harness.js';
import { startHoldProxy } from './hold-proxy.js';
import type { HoldProxy, SeenRequest, Trap } from './hold-proxy.js';
import { HELD_MOVE_MS, ended } from './held-sandbox.js';
import type { SimCommand, SimResult, Simulation } from './sim-harness.js';
import { startSimulation } from './sim-harness.js';
import type { FakeClock } from './fake-clock.js';

/** How long, in real time, a step loop goes on before it fails (a run stuck on no timer). */
const REAL_LIMIT_MS = 30_000;

/** A real pause, for the I/O the fired timers started (HTTP, the sandbox's turn) to happen. */
const settle = (ms = 2) => new Promise<void>((r) => setTimeout(r, ms));

export interface HeldSimulation {
  sim: Simulation;
  url: string;
  env: Record<string, string>;
  /** Starts one command line in the simulation. */
  start(args: string[], env?: Record<string, string | undefined>): SimCommand;
  /**
   * Runs one command line to its end, moving the clock a poll at a time as its waits need (moves
   * in flight stay held: for `control`, `status`, a run that stops at once). A run that must
   * drain: `pumpUntil(start(...).done)`.
   */
  cli(...args: string[]): Promise<SimResult>;
  /**
   * Moves the clock on by `ms` at once, firing what falls due in order, then lets the work that
   * started run (moves end HELD_MOVE_MS after they started).
   */
  advance(ms: number): Promise<void>;
  /** Moves the clock past every move in flight. */
  letGo(): Promise<void>;
  /**
   * Moves the clock a little at a time (to the next timer, at most `stepMs`) and lets the work it
   * fired run, until `ok(read())`, for at most `limitMs` of the clock (well short of a move's end,
   * so the moves in flight stay held). Fails when it does not hold by then.
   */
  stepUntil<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, limitMs?: number, stepMs?: number): Promise<T>;
  /** Steps the clock (moves held) until `cmd` ended; its result. */
  endOf(cmd: SimCommand): Promise<SimResult>;
  /** Lets moves end again and again until `done` settles; returns its result. */
  pumpUntil<T>(done: Promise<T>): Promise<T>;
  /** Every move the sandbox recorded, of every kind, oldest first. */
  moves(): Promise<SandboxMove[]>;
  /** The storage weights the sandbox holds. */
  weights(): Promise<Record<string, number>>;
}

/**
 * Moves `clock` a little at a time (at most `stepMs`, never past its next timer) and lets the work
 * each step fired run, until `ok(read())`; fails once `limitMs` of the clock went by without it.
 */
export async function stepClockUntil<T>(
  clock: FakeClock,
  read: () => T | Promise<T>,
  ok: (v: T) => boolean,
  limitMs = 20_000,
  stepMs = 250,
): Promise<T> {
  const until = clock.now() + limitMs;
  const realUntil = Date.now() + REAL_LIMIT_MS;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (clock.now() >= until || Date.now() > realUntil)
      throw new Error(`not so after ${limitMs} ms of the simulated clock: ${JSON.stringify(v)}`);
    // Nothing waits on the clock: the code is working (a first import, I/O); time stands still meanwhile.
    if (clock.timerCount === 0) {
      await settle(5);
      continue;
    }
    const to = Math.min(until, clock.now() + stepMs, clock.nextDue() ?? Number.POSITIVE_INFINITY);
    await clock.advanceTo(Math.max(to, clock.now() + 1));
    // Short steps and a pause after each: the clock runs at most some 50 times faster than the
    // code under test works, so work that takes real time (a command's set-up) sees little of it pass.
    await settle(5);
  }
}

export async function startHeldSimulation(
  dir: string,
  counts: { projects: number; snippets: number; groups: number },
  opts: { faults?: SandboxOptions['faults']; db?: string; moveMs?: number } = {},
): Promise<HeldSimulation> {
  const moveMs = opts.moveMs ?? HELD_MOVE_MS;
  // The commands' modules, loaded before the clock is moved (the first load takes real seconds).
  await Promise.all([
    import('../../src/cli/run.js'),
    import('../../src/cli/control.js'),
    import('../../src/cli/status.js'),
    import('../../src/cli/report.js'),
    import('../../src/cli/revert.js'),
  ]);
  const sim = await startSimulation({
    seed: writeSeed(dir, counts),
    moveDurationMs: moveMs,
    workers: 50,
    ...(opts.db ? { db: opts.db } : {}),
    ...(opts.faults ? { faults: opts.faults } : {}),
  });
  sim.clock.autoAdvance = false;
  const env = sandboxEnv(sim.url);
  // One jump: each timer due on the way fires once, at its time, and what it started (a poll's
  // request) runs after, against the clock at its new time. (Firing them one turn apart instead
  // would replay every poll of a held minute, each a real request.)
  const advance = async (ms: number) => {
    sim.clock.advance(ms);
    await settle(5);
  };
  const letGo = () => advance(moveMs + 1_000);
  const pumpUntil = async <T>(done: Promise<T>): Promise<T> => {
    let over = false;
    let failed: unknown = null;
    let value: T | undefined;
    done.then(
      (v) => ((value = v), (over = true)),
      (err: unknown) => ((failed = err ?? new Error('rejected')), (over = true)),
    );
    while (!over) await letGo();
    if (failed) throw failed;
    return value as T;
  };
  const stepUntil: HeldSimulation['stepUntil'] = (read, ok, limitMs, stepMs) =>
    stepClockUntil(sim.clock, read, ok, limitMs, stepMs);
  const endOf = async (cmd: SimCommand): Promise<SimResult> => {
    let result: SimResult | null = null;
    void cmd.done.then((r) => (result = r));
    return (await stepUntil(
      () => result,
      (r) => r !== null,
    )) as SimResult;
  };
  const start: HeldSimulation['start'] = (args, extra) => sim.start(args, { cwd: dir, env: { ...env, ...extra } });
  // A command left running when its test ends (a failed assertion) is interrupted and waited for,
  // so it writes nothing after the directory is gone.
  const started: SimCommand[] = [];
  onTestFinished(async () => {
    let over = false;
    for (const c of started) c.interrupt();
    void Promise.all(started.map((c) => c.done.catch(() => undefined))).then(() => (over = true));
    for (let n = 0; !over && n < 200; n++) await letGo();
  });
  return {
    sim,
    url: sim.url,
    env,
    start(args, extra) {
      const c = start(args, extra);
      started.push(c);
      return c;
    },
    cli: (...args) => endOf(start(args)),
    endOf,
    advance,
    letGo,
    stepUntil,
    pumpUntil,
    async moves() {
      const all = [...(await movesOf(sim.url, 'project')), ...(await movesOf(sim.url, 'snippet'))];
      return [...all, ...(await movesOf(sim.url, 'group'))];
    },
    async weights() {
      const res = await fetch(`${sim.url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
      return ((await res.json()) as { repository_storages_weighted: Record<string, number> })
        .repository_storages_weighted;
    },
  };
}

/** Starts `args` and steps the clock until `n` moves are in flight in the held simulation. */
export async function startWithMovesInFlight(held: HeldSimulation, args: string[], n: number): Promise<SimCommand> {
  const run = held.start(args);
  await held.stepUntil(
    async () => (await held.moves()).filter((m) => !ended(m)).length,
    (k) => k >= n,
  );
  return run;
}

/**
 * A simulation (moves of `opts.moveDurationMs`, the clock skipping every wait) behind a hold proxy
 * (./hold-proxy.ts), in a temporary directory; gone when the test ends. `arm` stops the clock at
 * the request it holds (autoAdvance off), so the run's other waits stand still with it while the
 * test acts; `resume` lets the clock skip again.
 */
export async function startProxiedSimulation(
  prefix: string,
  opts: { moveDurationMs: number; workers: number },
  counts: { projects: number; snippets: number; groups: number },
): Promise<{
  dir: string;
  sim: Simulation;
  proxy: HoldProxy;
  arm(trap: Trap): Promise<SeenRequest>;
  resume(): void;
}> {
  const dir = tempDir(prefix);
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const sim = await startSimulation({ seed: writeSeed(dir, counts), ...opts });
  const proxy = await startHoldProxy(sim.url);
  onTestFinished(() => proxy.close());
  return {
    dir,
    sim,
    proxy,
    arm: (trap) =>
      proxy.arm({
        ...trap,
        match: (r) => {
          const hit = trap.match(r);
          if (hit) sim.clock.autoAdvance = false;
          return hit;
        },
      }),
    resume: () => (sim.clock.autoAdvance = true),
  };
}
