/**
 * `move.concurrency: auto` end to end on the in-process harness (one simulated clock), against a
 * sandbox whose disks have a bandwidth (seed `instance.storage_bandwidth`), so that throughput has
 * a knee: what an operator sees of the limiter. Every change is a `cap.changed` event with an
 * `auto:` reason; `status` (text and --json) and the progress line show the cap and its reason; the
 * report's timeline (HTML and JSON) lists the changes; `control --concurrency N` pins the cap and
 * `--concurrency auto` hands it back; a pause and a closed window win over the limiter; a resumed
 * run goes on from the cap it saved, not from min.
 */
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DAYS } from '../src/time/windows.js';
import { sandboxEnv, tempDir, writeChangedSeed, writePlan } from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { startAuto } from '../src/schedule/auto-limit.js';
import type { Simulation } from './support/sim-harness.js';

interface Cap {
  seq: number;
  at: number;
  cap: number;
  limit: string;
  reason: string;
  paused: boolean;
}

/** Every `cap.changed` the checkpoint holds, oldest first (read-only, beside the run). */
/** The `concurrency` of each `drain.dry_run` event in a dry run's checkpoint. */
function dryRunConcurrencies(checkpoint: string): unknown[] {
  const d = new Database(checkpoint, { readonly: true, fileMustExist: true });
  try {
    return (d.prepare("SELECT data FROM events WHERE type = 'drain.dry_run' ORDER BY seq").all() as { data: string }[])
      .map((r) => (JSON.parse(r.data) as { concurrency?: unknown }).concurrency)
      .filter((c) => c !== undefined);
  } finally {
    d.close();
  }
}

function capsOf(checkpoint: string): Cap[] {
  if (!existsSync(checkpoint)) return [];
  const d = new Database(checkpoint, { readonly: true, fileMustExist: true });
  try {
    return (
      d.prepare("SELECT seq, at, data FROM events WHERE type = 'cap.changed' ORDER BY seq").all() as {
        seq: number;
        at: number;
        data: string;
      }[]
    ).map((r) => ({ seq: r.seq, at: r.at, ...(JSON.parse(r.data) as Omit<Cap, 'seq' | 'at'>) }));
  } catch {
    return [];
  } finally {
    d.close();
  }
}

function startedSeqs(checkpoint: string): number[] {
  const d = new Database(checkpoint, { readonly: true, fileMustExist: true });
  try {
    return (d.prepare("SELECT seq FROM events WHERE type = 'run.started' ORDER BY seq").all() as { seq: number }[]).map(
      (r) => r.seq,
    );
  } finally {
    d.close();
  }
}

/** Moves the simulated clock half a second at a time until `until` holds (at most `limitMs` of it). */
async function stepUntil(sim: Simulation, until: () => boolean, limitMs = 600_000): Promise<void> {
  for (let t = 0; t < limitMs; t += 500) {
    if (until()) return;
    // Real I/O (HTTP to the sandbox, in this process) gets its turn between the clock's steps.
    await new Promise((resolve) => setTimeout(resolve, 10));
    await sim.clock.advanceAsync(500);
  }
  throw new Error(`not reached within ${limitMs} ms of the simulated clock`);
}

/** A sandbox whose source disks read at 100 MiB/s each, and an auto plan with bounds 2 to 16. */
async function autoRun(opts: { projects?: number; window?: (day: string) => string } = {}) {
  const dir = tempDir('auto-sim');
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const seed = writeChangedSeed(dir, { projects: opts.projects ?? 60, snippets: 0, groups: 0 }, (doc) => {
    doc.setIn(
      ['instance', 'storage_bandwidth'],
      doc.createNode({ 'nfs-1': '100MiB', 'nfs-2': '100MiB', default: '100MiB', cluster: '100MiB' }),
    );
  });
  const sim = await startSimulation({ seed, db: join(dir, 'sandbox.db'), workers: 32 });
  const plan = writePlan(dir);
  writeFileSync(
    plan,
    readFileSync(plan, 'utf8').replace(/concurrency: \d+/, 'concurrency: { auto: { min: 2, max: 16 } }'),
  );
  if (opts.window) {
    const day = DAYS[(new Date(sim.clock.now()).getUTCDay() + 3) % 7]!;
    appendFileSync(plan, `schedule:\n  timezone: UTC\n  windows: ["${opts.window(day)}"]\n`);
  }
  return { dir, sim, plan, checkpoint: join(dir, 'state', 'it.db'), env: sandboxEnv(sim.url) };
}

describe('move.concurrency: auto, as the operator sees it (one simulated clock, disks with a bandwidth)', () => {
  it('auto: reasons in cap.changed, status, the progress line and the report; control pins and unpins; a pause wins', async () => {
    const { dir, sim, plan, checkpoint, env } = await autoRun({ projects: 120 });
    sim.clock.autoAdvance = false;
    const run = sim.start(['run', plan], { cwd: dir, env });
    // The limiter starts at min and raises the cap once a window of moves measured a throughput.
    await stepUntil(sim, () => capsOf(checkpoint).some((c) => / trying \d+$/.test(c.reason)));
    const caps = capsOf(checkpoint);
    expect(caps[0]).toMatchObject({ cap: 2, limit: 'plan', reason: 'auto: starting at 2 (min 2, max 16)' });
    const raise = caps.find((c) => / trying \d+$/.test(c.reason))!;
    expect(raise.reason).toMatch(/^auto: .* at 2; trying 4$/);
    expect(raise.cap).toBe(4);

    const last = caps[caps.length - 1]!;
    const text = await sim.shardmove(['status', plan], { cwd: dir, env });
    expect(text.stdout).toContain(
      `  cap: ${last.cap}, chosen by move.concurrency: auto: ${last.reason.slice('auto: '.length)} (since ${new Date(last.at).toISOString()})`,
    );
    const json = await sim.shardmove(['status', plan, '--json'], { cwd: dir, env });
    const s = JSON.parse(json.stdout) as {
      auto: unknown;
      planAuto: boolean;
      cap: { cap: number; reason: string };
      now: unknown;
    };
    expect(s.auto).toEqual({ cap: last.cap, reason: last.reason.slice('auto: '.length) });
    expect(s.cap).toMatchObject({ cap: last.cap, limit: 'plan', reason: last.reason });
    expect(s.now).toBeNull();
    expect(s.planAuto).toBe(true);

    // A number given live pins the cap: the limiter waits, the reason says control.
    const pin = await sim.shardmove(['control', plan, '--concurrency', '6'], { cwd: dir, env });
    expect(pin.code, pin.stdout + pin.stderr).toBe(0);
    // The limiter's cap is no plan's number: control says the plan's is auto.
    expect(pin.stdout).toContain("cap 6 from now on (the plan's is auto)");
    await stepUntil(sim, () => capsOf(checkpoint).some((c) => c.limit === 'control'));
    const pinned = capsOf(checkpoint).find((c) => c.limit === 'control')!;
    expect(pinned).toMatchObject({
      cap: 6,
      reason: 'set with shardmove control (the plan says auto (2 to 16))',
    });
    const pinnedText = await sim.shardmove(['status', plan], { cwd: dir, env });
    expect(pinnedText.stdout).toContain("  control: cap 6, set with shardmove control (the plan's is auto)");
    const whilePinned = await sim.shardmove(['status', plan, '--json'], { cwd: dir, env });
    expect(JSON.parse(whilePinned.stdout)).toMatchObject({ auto: null, planAuto: true, now: { by: 'control' } });
    // Held pinned for a while of the run's clock: the limiter changes nothing meanwhile.
    await sim.clock.advanceAsync(20_000);
    expect(capsOf(checkpoint).filter((c) => c.seq > pinned.seq)).toEqual([]);

    // "auto" hands it back to the limiter, which goes on from its own cap.
    const unpin = await sim.shardmove(['control', plan, '--concurrency', 'auto'], { cwd: dir, env });
    expect(unpin.code, unpin.stdout + unpin.stderr).toBe(0);
    expect(unpin.stdout).toContain("cap back to the plan's move.concurrency: auto (its limiter decides again)");
    await stepUntil(sim, () => capsOf(checkpoint).some((c) => c.seq > pinned.seq));
    const back = capsOf(checkpoint).find((c) => c.seq > pinned.seq)!;
    expect(back.limit).toBe('plan');
    expect(back.reason).toMatch(/^auto: the limiter decides again from \d+$/);

    // A pause wins over the limiter: cap 0 while it lasts, and no auto change meanwhile.
    await sim.shardmove(['control', plan, '--pause'], { cwd: dir, env });
    await stepUntil(sim, () => capsOf(checkpoint).some((c) => c.seq > back.seq && c.limit === 'paused'));
    const paused = capsOf(checkpoint).find((c) => c.seq > back.seq && c.limit === 'paused')!;
    expect(paused.cap).toBe(0);
    await sim.clock.advanceAsync(20_000);
    expect(capsOf(checkpoint).filter((c) => c.seq > paused.seq)).toEqual([]);
    await sim.shardmove(['control', plan, '--unpause'], { cwd: dir, env });

    sim.clock.autoAdvance = true;
    await sim.clock.advanceAsync(1_000);
    const done = await run.done;
    expect(done.code, done.stdout + done.stderr).toBe(0);
    // The progress line of the run says the limiter's cap whenever it was the cap in force.
    const lines = done.stderr.split('\n').filter((l) => / in flight/.test(l));
    for (const l of lines) if (!/PAUSED|cap 6 \(shardmove control\)/.test(l)) expect(l).toMatch(/cap \d+ \(auto\): /);

    // The report's timeline lists every change the limiter made, in its words (JSON and HTML).
    const autoCaps = capsOf(checkpoint).filter((c) => c.limit === 'plan' && c.reason.startsWith('auto: '));
    expect(autoCaps.length).toBeGreaterThanOrEqual(3);
    // The run's final report lists its newest changes too, each with its time and reason.
    const newest = autoCaps[autoCaps.length - 1]!;
    expect(done.stdout).toContain(`Cap chosen by move.concurrency: auto (${autoCaps.length} change`);
    expect(done.stdout.replace(/\s+/g, ' ')).toContain(
      `${new Date(newest.at).toISOString().slice(11, 19)} UTC cap ${newest.cap}: ${newest.reason.slice('auto: '.length)}`,
    );
    const report = await sim.shardmove(['report', plan, '--json'], { cwd: dir, env });
    expect(report.code, report.stderr).toBe(0);
    const markers = (JSON.parse(report.stdout) as { timeline: { markers: { type: string; label: string }[] } }).timeline
      .markers;
    const labels = markers.filter((m) => m.type === 'cap').map((m) => m.label);
    for (const c of autoCaps) expect(labels).toContain(`cap ${c.cap} (auto): ${c.reason.slice('auto: '.length)}`);
    const html = await sim.shardmove(['report', plan, '--html', '-'], { cwd: dir, env });
    expect(html.stdout).toContain(`cap ${raise.cap} (auto): ${raise.reason.slice('auto: '.length)}`);
  }, 120_000);

  it('a resumed run goes on from the cap it saved ("auto: resumed at N"), not from min', async () => {
    const { dir, sim, plan, checkpoint, env } = await autoRun({ projects: 80 });
    sim.clock.autoAdvance = false;
    const first = sim.start(['run', plan], { cwd: dir, env });
    await stepUntil(sim, () => capsOf(checkpoint).some((c) => c.cap > 2 && c.limit === 'plan'));
    const saved = capsOf(checkpoint)
      .filter((c) => c.limit === 'plan')
      .pop()!;
    expect(saved.cap).toBeGreaterThan(2);
    first.interrupt();
    sim.clock.autoAdvance = true;
    await sim.clock.advanceAsync(1_000);
    expect((await first.done).code).toBe(130);
    const before = capsOf(checkpoint)
      .filter((c) => c.limit === 'plan')
      .pop()!;

    const again = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const resumedAt = startedSeqs(checkpoint).pop()!;
    const firstAfter = capsOf(checkpoint).find((c) => c.seq > resumedAt)!;
    expect(firstAfter).toMatchObject({ cap: before.cap, limit: 'plan', reason: `auto: resumed at ${before.cap}` });
  }, 120_000);

  it('outside every window an auto plan waits: the window wins over the limiter', async () => {
    const { dir, sim, plan, checkpoint, env } = await autoRun({ projects: 10, window: (day) => `${day} 01:00-02:00` });
    sim.clock.autoAdvance = false;
    const run = sim.start(['run', plan], { cwd: dir, env });
    await stepUntil(sim, () => capsOf(checkpoint).some((c) => c.limit === 'window'));
    const s = await sim.shardmove(['status', plan, '--json'], { cwd: dir, env });
    expect(JSON.parse(s.stdout)).toMatchObject({ auto: null, now: { by: 'window', stopped: true } });
    expect(capsOf(checkpoint).pop()).toMatchObject({ cap: 0, limit: 'window' });
    run.interrupt();
    sim.clock.autoAdvance = true;
    await sim.clock.advanceAsync(1_000);
    expect((await run.done).code).toBe(130);
  }, 60_000);

  it('the dry run says which cap its estimate assumes: the starting point, or the knee the real checkpoint beside it found', async () => {
    const { dir, sim, plan, env } = await autoRun({ projects: 20 });
    const first = await sim.shardmove(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toMatch(/estimated duration: .* at 2 moves in flight\n/);
    expect(first.stdout).toContain("move.concurrency: auto: assumes 2, the limiter's starting point (min)");
    const dryRunDb = join(dir, 'state', 'it.dry-run.db');
    expect(new Set(dryRunConcurrencies(dryRunDb))).toEqual(new Set([2]));
    // The twin rehearses at the cap the estimate assumed, not at auto's max of 16.
    const twin = await sim.shardmove(['twin', plan, '--out', 'twin seed.yaml'], { cwd: dir, env });
    expect(twin.code, twin.stdout + twin.stderr).toBe(0);
    // Every rehearsal line (on screen and in the seed's header) names 2, and none another number.
    const shown = twin.stdout + readFileSync(join(dir, 'twin seed.yaml'), 'utf8');
    expect(shown).toMatch(/--workers 2(?!\d)/);
    expect(new Set([...shown.matchAll(/--workers (\d+)/g)].map((m) => m[1]))).toEqual(new Set(['2']));

    // A real run of the plan found its knee at 6 (its limiter's state, as the run keeps it).
    const real = join(dir, 'state', 'it.db');
    const store = openCheckpoint(real);
    const state = { ...startAuto({ min: 2, max: 16 }, sim.clock.now(), 6), knee: 6 };
    store.setAutoCap(JSON.stringify({ v: 1, state, reason: 'auto: throughput flat at 6, 8 gained nothing' }), 0);
    store.close();
    rmSync(join(dir, 'state', 'it.dry-run.db'), { force: true });
    const again = await sim.shardmove(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toMatch(/estimated duration: .* at 6 moves in flight\n/);
    expect(new Set(dryRunConcurrencies(dryRunDb))).toEqual(new Set([6]));
    expect(again.stdout.replace(/\s+/g, ' ')).toContain(
      `move.concurrency: auto: assumes 6, the knee the last run found on this instance (${real})`,
    );
  }, 60_000);
});
