/**
 * A stop from outside with the stop file beside the checkpoint (`<checkpoint>.stop`), where only a
 * file can be dropped, and the stops that meet the run between two requests: during verification,
 * and around a bulk job, which the instance cannot call back. Judged from the sandbox's records
 * and the checkpoint, as ./cli-stop.test.ts judges `control --stop`. The run and the sandbox are in
 * this process on one simulated clock (./support/sim-speedc.ts): nothing here is about the process
 * boundary, and the waits (a held move, the stop check, the polls) cost no real time.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { flat, movesOf, sandboxEnv, tempDir, writePlan } from './support/cli-harness.js';
import { ended } from './support/held-sandbox.js';
import {
  startHeldSimulation,
  startProxiedSimulation,
  startWithMovesInFlight,
  stepClockUntil,
} from './support/sim-speedc.js';
import { eventsOf, has, intentsAfterStop, lstatOrNull, setup, stopInRow } from './support/stop-judge.js';

describe('the stop file, and stops between two requests (one simulated clock, real HTTP)', () => {
  it('the stop file at the start (pre-flight): ends at once, writes nothing to the instance; any kind of entry, never followed', async () => {
    const { dir, plan } = setup('stop-file');
    const held = await startHeldSimulation(dir, { projects: 6, snippets: 2, groups: 1 });
    const weights = await held.weights();
    const cli = held.cli;
    const precious = join(dir, 'precious.txt');
    writeFileSync(precious, 'keep me\n');
    // Each a checkpoint of its own, with what an operator (or an attacker) leaves at <checkpoint>.stop.
    const entries: Record<string, (at: string) => void> = {
      file: (at) => writeFileSync(at, 'please stop\n'),
      empty: (at) => writeFileSync(at, ''),
      unreadable: (at) => {
        writeFileSync(at, 'secret\n');
        chmodSync(at, 0o000);
      },
      'symlink to a file': (at) => symlinkSync(precious, at),
      'dangling symlink': (at) => symlinkSync(join(dir, 'nowhere'), at),
      'empty directory': (at) => mkdirSync(at),
      // A FIFO would block whoever opened it: the run only looks at it.
      fifo: (at) => execFileSync('mkfifo', [at]),
    };
    for (const [name, make] of Object.entries(entries)) {
      const state = join(dir, name.replace(/ /g, '-'), 'c.db');
      mkdirSync(join(state, '..'));
      make(`${state}.stop`);
      const r = await cli('run', plan, '--state', state);
      expect(r.code, `${name}: ${r.stderr}`).toBe(6);
      expect(r.stdout, name).toMatch(
        /(^|\n)STOPPED on request \(the stop file\): nothing was in flight\n {2}step: preflight /,
      );
      expect(flat(r.stdout), name).toContain(`The stop file was removed: ${state}.stop\n`);
      expect(flat(r.stdout), name).toContain(`To continue from here: shardmove run ${plan} --state ${state}\n`);
      expect(existsSync(`${state}.stop`) || lstatOrNull(`${state}.stop`) !== null, name).toBe(false);
      // Nothing was written to the instance: no mutating request in the audit trail.
      expect(
        eventsOf(state).filter((e) => e.type === 'http.mutating'),
        name,
      ).toEqual([]);
      expect(
        eventsOf(state).map((e) => e.type),
        name,
      ).toContain('run.stopped');
      expect(stopInRow(state), name).toBeNull();
    }
    expect(readFileSync(precious, 'utf8')).toBe('keep me\n');
    expect(await held.moves()).toEqual([]);
    expect(await held.weights()).toEqual(weights);

    // A directory with something in it is not emptied: it is left, said, and stops every run until removed.
    const state = join(dir, 'full-dir', 'c.db');
    mkdirSync(`${state}.stop`, { recursive: true });
    writeFileSync(join(`${state}.stop`, 'note.txt'), 'why\n');
    const first = await cli('run', plan, '--state', state);
    expect(first.code, first.stderr).toBe(6);
    expect(flat(first.stdout)).toContain(
      `could not remove the stop file ${state}.stop (ENOTEMPTY): remove it yourself; while it is there, every run stops at once`,
    );
    expect(readFileSync(join(`${state}.stop`, 'note.txt'), 'utf8')).toBe('why\n');
    expect((await cli('run', plan, '--state', state)).code).toBe(6);
    rmSync(`${state}.stop`, { recursive: true });
    // Removed: the same run goes on from its checkpoint.
    const resumed = await held.pumpUntil(held.start(['run', plan, '--state', state]).done);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('resuming the run started');
  });

  it('during verification: the round ends cleanly at the stop, and the resumed run verifies again', async () => {
    const { dir, sim, proxy, arm, resume } = await startProxiedSimulation(
      'stop-verify',
      { moveDurationMs: 20, workers: 20 },
      { projects: 10, snippets: 2, groups: 1 },
    );
    const plan = writePlan(dir, { concurrency: 10 });
    const file = join(dir, 'state', 'it.db');
    const env = sandboxEnv(proxy.url);
    const step = () =>
      eventsOf(file)
        .filter((e) => e.type === 'step.started')
        .at(-1)?.data.step;
    // The first read of the verification step is answered by the sandbox, and the answer held back.
    const trapped = arm({ match: (r) => r.method === 'GET' && step() === 'verify', forward: true });
    const run = sim.start(['run', plan], { cwd: dir, env });
    await trapped;
    const moves = async () =>
      (await Promise.all((['project', 'snippet', 'group'] as const).map((k) => movesOf(sim.url, k)))).flat();
    const atStop = await moves();
    writeFileSync(`${file}.stop`, '');
    await stepClockUntil(sim.clock, has(file, 'run.stopping'), (x) => x, 10_000);
    proxy.release();
    resume();
    const stopped = await run.done;
    expect(stopped.code, stopped.stderr).toBe(6);
    expect(stopped.stdout).toContain('  step: verify (stop asked for at ');
    expect(existsSync(`${file}.stop`)).toBe(false);
    expect(await moves()).toEqual(atStop);
    const events = eventsOf(file);
    const seen = events.findIndex((e) => e.type === 'run.stopping');
    expect(events.slice(seen).filter((e) => e.type === 'move.intent')).toEqual([]);
    expect(events[seen]?.data).toMatchObject({ by: 'file', step: 'verify', inFlight: 0 });

    const resumed = await sim.shardmove(['run', plan], { cwd: dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('Verification: passed');
    expect(eventsOf(file).filter((e) => e.type === 'step.started' && e.data.step === 'verify')).toHaveLength(2);
    expect(await moves()).toEqual(atStop);
  });

  it('bulk mode: the bulk job cannot be called back, so the run follows it to its end before it stops', async () => {
    const dir = tempDir('stop-bulk');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const plan = writePlan(dir, { mode: 'bulk', concurrency: 4, from: ['nfs-1'] });
    const file = join(dir, 'state', 'it.db');
    const held = await startHeldSimulation(dir, { projects: 16, snippets: 2, groups: 1 });
    const onSource = (
      held.sim.sandbox.state.db
        .prepare("SELECT COUNT(*) AS n FROM items WHERE kind = 'project' AND storage = 'nfs-1'")
        .get() as {
        n: number;
      }
    ).n;
    // The bulk job makes a move for every project on the source; they are held.
    const run = await startWithMovesInFlight(held, ['run', plan], onSource);
    expect((await held.cli('control', plan, '--stop')).code).toBe(0);
    await held.stepUntil(has(file, 'run.stopping'), (x) => x, 10_000);
    const atStop = await held.moves();
    const done = await held.pumpUntil(run.done);
    expect(done.code, done.stderr).toBe(6);
    const after = await held.moves();
    expect(after.map((m) => m.id)).toEqual(atStop.map((m) => m.id));
    expect(after.filter((m) => !ended(m))).toEqual([]);
    // It followed the job to its end (every move attributed), and started nothing of its own after.
    const events = eventsOf(file);
    expect(events.filter((e) => e.type === 'bulk.move_seen')).toHaveLength(onSource);
    expect(intentsAfterStop(events)).toBe(0);
    const resumed = await held.pumpUntil(held.start(['run', plan]).done);
    expect(resumed.code, resumed.stderr).toBe(0);
  });

  it('bulk mode: a stop just before the bulk POST holds it; a stop while the POST is in the air waits for the job', async () => {
    const { dir, sim, proxy, arm, resume } = await startProxiedSimulation(
      'stop-bulk-post',
      { moveDurationMs: 20, workers: 20 },
      { projects: 12, snippets: 2, groups: 1 },
    );
    const plan = writePlan(dir, { mode: 'bulk', concurrency: 4, from: ['nfs-1'] });
    const env = sandboxEnv(proxy.url);
    const moves = () => movesOf(sim.url, 'project');
    const isMoveList = (url: string) => url.startsWith('/api/v4/project_repository_storage_moves');

    // The read just before the bulk POST (the newest move, the job's baseline) is held; the stop
    // comes then: the POST is never sent.
    const before = join(dir, 'before.db');
    const read = arm({
      match: (r) => r.method === 'GET' && isMoveList(r.url) && /[?&]per_page=1(&|$)/.test(r.url),
      forward: true,
    });
    const first = sim.start(['run', plan, '--state', before], { cwd: dir, env });
    await read;
    writeFileSync(`${before}.stop`, '');
    await stepClockUntil(sim.clock, has(before, 'run.stopping'), (x) => x, 10_000);
    proxy.release();
    resume();
    const held = await first.done;
    expect(held.code, held.stderr).toBe(6);
    expect(await moves()).toEqual([]);
    expect(eventsOf(before).filter((e) => e.type === 'bulk.intent')).toEqual([]);

    // The bulk POST is answered by the sandbox, the answer held back; the stop comes then: the job
    // runs on the instance whatever the run does, so the run finds its moves and follows them to
    // their end before it stops.
    const inAir = join(dir, 'in-air.db');
    const post = arm({ match: (r) => r.method === 'POST' && isMoveList(r.url), forward: true });
    const second = sim.start(['run', plan, '--state', inAir], { cwd: dir, env });
    await post;
    writeFileSync(`${inAir}.stop`, '');
    await stepClockUntil(sim.clock, has(inAir, 'run.stopping'), (x) => x, 10_000);
    proxy.release();
    resume();
    const followed = await second.done;
    expect(followed.code, followed.stderr).toBe(6);
    const job = await moves();
    expect(job.length).toBeGreaterThan(0);
    expect(job.filter((m) => !ended(m))).toEqual([]);
    expect(eventsOf(inAir).filter((e) => e.type === 'bulk.move_seen')).toHaveLength(job.length);
    expect(intentsAfterStop(eventsOf(inAir))).toBe(0);
  });
});
