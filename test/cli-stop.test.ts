/**
 * A stop from outside with `shardmove control PLAN --stop`. The run (a separate process) schedules
 * into a sandbox whose moves are held by its own clock, so the moves in flight at the stop are
 * built, then let go. Judged from the sandbox's records (no move created after the run saw the stop,
 * every move in flight at the stop ended before the run exited) and the checkpoint (no move intent
 * after the stop, the stop consumed), then resumed to its end. The stop file: ./cli-stop-file.test.ts.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { parseControlChange } from '../src/cli/control.js';
import { RunEventSchema } from '../src/events/run-events.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { flat, invariantViolations, movesOf, runCli, sandboxEnv, writeSeed } from './support/cli-harness.js';
import { HELD_MOVE_MS, ended, startHeldSandbox } from './support/held-sandbox.js';
import { startSimulation } from './support/sim-harness.js';
import { startHeldSimulation, startWithMovesInFlight } from './support/sim-speedc.js';
import { eventsOf, has, intentsAfterStop, runWithMovesInFlight, setup, stopInRow } from './support/stop-judge.js';
import { until } from './support/until.js';

describe('parseControlChange: --stop', () => {
  it('takes --stop alone', () => {
    expect(parseControlChange({ pause: false, unpause: false, stop: true })).toEqual({ stop: true });
    for (const other of [{ pause: true }, { unpause: true }, { concurrency: '3' }])
      expect(() => parseControlChange({ pause: false, unpause: false, stop: true, ...other })).toThrow(
        /--stop takes no --pause, --unpause, --concurrency, --breaker, --rule or --latency-p90; give it alone/,
      );
  });
});

describe('control --stop (one simulated clock, real HTTP)', () => {
  it('control --stop mid-drain: nothing new starts, the moves in flight end, exit 6; the same run resumes it', async () => {
    const { dir, plan, file } = setup('stop-drain');
    const held = await startHeldSimulation(dir, { projects: 30, snippets: 4, groups: 2 });
    const cli = held.cli;
    const eventsFile = join(dir, 'events.jsonl');
    const metrics = join(dir, 'it.prom');
    // Two moves, then two more half a move later: they end at two different times.
    writeFileSync(plan, readFileSync(plan, 'utf8').replace('concurrency: 4', 'concurrency: 2'));
    const run = await startWithMovesInFlight(held, ['run', plan, '--events', eventsFile, '--metrics-file', metrics], 2);
    await held.advance(HELD_MOVE_MS / 2);
    expect((await cli('control', plan, '--concurrency', '4')).code).toBe(0);
    expect(
      await held.stepUntil(
        async () => (await held.moves()).length,
        (n) => n === 4,
        10_000,
      ),
    ).toBe(4);

    const asked = await cli('control', plan, '--stop');
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toMatch(
      /^stopping: no new moves; the moves in flight end first, then the run exits \(6\)\nthe run \(pid \d+\) obeys it within a second\ncheckpoint: /,
    );
    // Twice: the first request stands, nothing more is written.
    const again = await cli('control', plan, '--stop', '--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ changed: false, stop: { by: 'control' } });
    expect(await held.stepUntil(has(file, 'run.stopping'), (x) => x, 10_000)).toBe(true);
    expect(await held.stepUntil(has(file, 'cap.changed'), (x) => x)).toBe(true);

    // While its moves finish, status and the progress line say STOPPING.
    const status = await cli('status', plan);
    expect(status.stdout).toMatch(
      /\n {2}now: STOPPING by shardmove control: no new move; it exits once none is in flight \(since [^)]+\)\n {7}then `run` again continues it\n/,
    );
    const atStop = await held.moves();
    expect(atStop.filter((m) => !ended(m))).toHaveLength(4);
    // The run's own line says so while its moves are held (a pipe gets a line at each hold).
    expect(
      await held.stepUntil(
        () => run.stdout(),
        (o) => /STOPPING by shardmove control/.test(o),
        10_000,
      ),
    ).toMatch(/STOPPING by shardmove control/);

    // The first two end; two slots are free, and nothing new takes them while the others go on.
    await held.advance(HELD_MOVE_MS / 2 + 1_000);
    await held.stepUntil(
      () => eventsOf(file).filter((e) => e.type === 'move.finished').length,
      (n) => n === 2,
      10_000,
    );
    await held.stepUntil(has(file, 'cap.changed'), () =>
      eventsOf(file).some((e) => e.type === 'cap.changed' && e.data.limit === 'stopping'),
    );
    expect(await held.moves()).toHaveLength(4);
    expect(eventsOf(file).some((e) => e.type === 'run.stopped')).toBe(false);

    const done = await held.pumpUntil(run.done);
    expect(done.code, done.stderr).toBe(6);
    expect(done.stdout).toContain('STOPPED on request (shardmove control --stop): 4 move(s) in flight ended first\n');
    expect(flat(done.stdout)).toContain(
      ' step: drain nfs-1,nfs-2,default/projects,snippets,groups (stop asked for at ',
    );
    // The command that continues it keeps the outputs this run fed.
    expect(flat(done.stdout)).toContain(
      `To continue from here: shardmove run ${plan} --events ${eventsFile} --metrics-file ${metrics}\n`,
    );
    expect(done.stdout).toMatch(/STOPPING by shardmove control/);
    expect(done.stderr).toContain(
      'note: stopping, asked by shardmove control --stop: nothing new starts; the 4 move(s) in flight are followed to their end',
    );

    // The sandbox: the same moves as at the stop, every one of them ended before the run exited.
    const after = await held.moves();
    expect(after.map((m) => m.id)).toEqual(atStop.map((m) => m.id));
    expect(after.filter((m) => !ended(m))).toEqual([]);
    // The checkpoint: no intent after the drain saw the stop; the request is consumed.
    const events = eventsOf(file);
    expect(intentsAfterStop(events)).toBe(0);
    expect(events.find((e) => e.type === 'run.stopping')?.data).toEqual({
      by: 'control',
      step: 'drain nfs-1,nfs-2,default/projects,snippets,groups',
      inFlight: 4,
    });
    expect(events.filter((e) => e.type === 'run.stopped').map((e) => e.data)).toEqual([
      { by: 'control', step: 'drain nfs-1,nfs-2,default/projects,snippets,groups' },
    ]);
    const stops = events
      .flatMap((e) => (e.type === 'control.changed' ? [e.data] : []))
      .filter((d) => d.stop !== undefined || d.previous.stop !== undefined);
    expect(stops).toHaveLength(2);
    expect(stops[0]).toMatchObject({ stop: { by: 'control' }, previous: { stop: null } });
    expect(stops[1]).toMatchObject({ previous: { stop: { by: 'control' } } });
    expect(stops[1]).not.toHaveProperty('stop');
    expect(stopInRow(file)).toBeNull();

    // --events: run.stopping, the step ended stopped, run.finished with the outcome and exit code 6.
    const lines = readFileSync(eventsFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => RunEventSchema.parse(JSON.parse(l)));
    expect(lines.find((l) => l.type === 'run.stopping')).toMatchObject({ by: 'control', inFlight: 4 });
    expect(lines.find((l) => l.type === 'step.ended' && l.outcome === 'stopped')).toMatchObject({
      step: 'drain nfs-1,nfs-2,default/projects,snippets,groups',
    });
    expect(lines.at(-1)).toMatchObject({ type: 'run.finished', outcome: 'stopped', exitCode: 6, error: null });
    expect(readFileSync(metrics, 'utf8')).toMatch(
      /^shardmove_run_end_timestamp_seconds\{[^}]*outcome="stopped"[^}]*\} /m,
    );

    // Status after it: stopped on request, and a stop now has nothing to stop (nothing is written).
    const stopped = await cli('status', plan);
    expect(stopped.stdout).toMatch(
      /^Plan it: stopped, step drain projects, snippets, groups from nfs-1, nfs-2, default\n {2}stopped on request at \S+: no process/,
    );
    expect(JSON.parse((await cli('status', plan, '--json')).stdout)).toMatchObject({ state: 'stopped' });
    const report = JSON.parse((await cli('report', plan, '--json')).stdout) as {
      outcome: { headline: string };
      timeline: { markers: { label: string }[] };
    };
    expect(report.outcome.headline).toBe('Stopped on request: run the plan again to continue');
    expect(report.timeline.markers.map((m) => m.label)).toEqual(
      expect.arrayContaining(['stopping (shardmove control --stop)', 'stopped on request']),
    );
    const late = await cli('control', plan, '--stop');
    expect(late.stdout).toMatch(/^nothing to stop: no run is going \(a stop would only stop the next `run` at once\)/);
    expect(stopInRow(file)).toBeNull();

    // The same run resumes it (it does not stop at once) and finishes.
    const resumed = await held.pumpUntil(held.start(['run', plan]).done);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('DONE: every repository moved and verified');
    for (const kind of ['project', 'snippet', 'group'] as const)
      expect(invariantViolations(await movesOf(held.url, kind), 'cluster')).toEqual([]);
    const finished = await cli('control', plan, '--stop');
    expect(finished.stdout).toMatch(/^nothing to stop: the run has ended \(done\); nothing written\n/);
  });

  it('while paused, while no window is open, and a dry run: each stops at once, nothing new starts', async () => {
    const { dir, plan, file } = setup('stop-held');
    const held = await startHeldSimulation(dir, { projects: 12, snippets: 2, groups: 1 });
    const cli = held.cli;

    // Paused with moves in flight: they end (let go), then the stop ends the run at once.
    const run = await startWithMovesInFlight(held, ['run', plan], 4);
    expect((await cli('control', plan, '--pause')).code).toBe(0);
    await held.stepUntil(has(file, 'control.changed'), (x) => x);
    await held.letGo();
    const paused = await held.stepUntil(
      async () => (await held.moves()).filter((m) => !ended(m)).length,
      (n) => n === 0,
    );
    expect(paused).toBe(0);
    const atStop = (await held.moves()).length;
    expect((await cli('control', plan, '--stop')).code).toBe(0);
    const stopped = await held.pumpUntil(run.done);
    expect(stopped.code, stopped.stderr).toBe(6);
    expect(stopped.stdout).toContain('STOPPED on request (shardmove control --stop): nothing was in flight\n');
    expect((await held.moves()).length).toBe(atStop);
    // The pause outlives the stop; the resumed run says so, and a stop ends it at once again.
    const status = await cli('status', plan);
    expect(status.stdout).toContain('(kept in the checkpoint for its next run)');
    const resumed = held.start(['run', plan]);
    await held.stepUntil(
      has(file, 'run.started'),
      () => eventsOf(file).filter((e) => e.type === 'run.started').length === 2,
    );
    expect((await cli('control', plan, '--stop')).code).toBe(0);
    const again = await held.pumpUntil(resumed.done);
    expect(again.code, again.stderr).toBe(6);
    expect(again.stderr).toContain('note: this run is paused (shardmove control)');
    expect((await held.moves()).length).toBe(atStop);

    // No window open: the run waits before its first write; the stop ends it there, nothing written.
    const windowed = join(dir, 'windowed.yaml');
    const day = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][(new Date(held.sim.clock.now()).getUTCDay() + 3) % 7];
    writeFileSync(
      windowed,
      `${readFileSync(plan, 'utf8')}schedule:\n  timezone: UTC\n  windows: ["${day} 01:00-02:00"]\n`,
    );
    const wfile = join(dir, 'w.db');
    const weights = await held.weights();
    const waiting = held.start(['run', windowed, '--state', wfile]);
    await held.stepUntil(has(wfile, 'window.closed'), (x) => x, 20_000);
    expect((await cli('control', windowed, '--state', wfile, '--stop')).code).toBe(0);
    const w = await held.pumpUntil(waiting.done);
    expect(w.code, w.stderr).toBe(6);
    expect(w.stdout).toMatch(
      /\nSTOPPED on request \(shardmove control --stop\): nothing was in flight\n {2}step: weights /,
    );
    expect(eventsOf(wfile).filter((e) => e.type === 'http.mutating')).toEqual([]);
    expect(await held.weights()).toEqual(weights);
    expect((await held.moves()).length).toBe(atStop);

    // A dry run stops the same way (its stop file is beside its own checkpoint), and says it changed nothing.
    const dry = join(dir, 'state', 'it.dry-run.db');
    writeFileSync(`${dry}.stop`, '');
    const d = await cli('run', plan, '--dry-run');
    expect(d.code, d.stderr).toBe(6);
    expect(d.stdout).toMatch(
      /(^|\n)DRY RUN STOPPED on request \(the stop file\): nothing was changed on the instance\n/,
    );
    expect(flat(d.stdout)).toContain(`To continue from here: shardmove run ${plan} --dry-run\n`);
    // control --stop on the dry run's checkpoint with no dry run going: nothing to stop, nothing written.
    const none = await cli('control', plan, '--state', dry, '--stop');
    expect(none.stdout).toMatch(/^nothing to stop: no run is going/);
    expect(stopInRow(dry)).toBeNull();
    const finished = await held.pumpUntil(held.start(['run', plan, '--dry-run']).done);
    expect(finished.code, finished.stderr).toBe(0);
  });

  it('a stop, then Ctrl-C: Ctrl-C wins (exit 130, moves left in flight), the stop is consumed and the next run goes on', async () => {
    const { dir, plan, file } = setup('stop-sigint');
    const held = await startHeldSimulation(dir, { projects: 12, snippets: 2, groups: 1 });
    const run = await startWithMovesInFlight(held, ['run', plan], 4);
    expect((await held.cli('control', plan, '--stop')).code).toBe(0);
    await held.stepUntil(has(file, 'run.stopping'), (x) => x, 10_000);
    // Ctrl-C is the signal of the command's context here (main() turns SIGINT into it).
    run.interrupt();
    const cut = await held.endOf(run);
    expect(cut.code, cut.stderr).toBe(130);
    expect(cut.stderr).toContain(
      'note: the stop asked for by shardmove control --stop was cleared: the run ended first',
    );
    expect((await held.moves()).filter((m) => !ended(m))).toHaveLength(4);
    expect(stopInRow(file)).toBeNull();
    // The next run follows those moves and goes on to the end: it does not stop at once.
    const resumed = await held.pumpUntil(held.start(['run', plan]).done);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(eventsOf(file).filter((e) => e.type === 'run.stopped')).toEqual([]);
  });

  it('a revert stops the same way: control --stop on the plan reaches the revert, which resumes with `shardmove revert`', async () => {
    const { dir, plan } = setup('stop-revert');
    const held = await startHeldSimulation(dir, { projects: 10, snippets: 2, groups: 1 });
    const cli = held.cli;
    const forward = await held.pumpUntil(held.start(['run', plan]).done);
    expect(forward.code, forward.stderr).toBe(0);
    const before = (await held.moves()).length;
    expect(await cli('control', plan, '--stop').then((r) => r.stdout)).toMatch(
      /^nothing to stop: the run has ended \(done\); nothing written\n/,
    );

    const run = await startWithMovesInFlight(held, ['revert', plan, '--yes'], 4);
    const asked = await cli('control', plan, '--stop');
    expect(asked.code, asked.stderr).toBe(0);
    const revertFile = join(dir, 'state', 'it.revert.db');
    expect(asked.stdout).toContain(`a revert holds ${join(dir, 'state', 'it.db')}: the stop is for the revert\n`);
    expect(asked.stdout).toContain(`checkpoint: ${revertFile}\n`);
    await held.stepUntil(has(revertFile, 'run.stopping'), (x) => x, 10_000);
    const atStop = await held.moves();
    const stopped = await held.pumpUntil(run.done);
    expect(stopped.code, stopped.stderr).toBe(6);
    expect(stopped.stdout).toContain('STOPPED on request (shardmove control --stop): 4 move(s) in flight ended first');
    expect(flat(stopped.stdout)).toContain(`To continue from here: shardmove revert ${plan}\n`);
    const after = await held.moves();
    expect(after.map((m) => m.id)).toEqual(atStop.map((m) => m.id));
    expect(after.filter((m) => !ended(m))).toEqual([]);
    expect(intentsAfterStop(eventsOf(revertFile))).toBe(0);
    expect(stopInRow(join(dir, 'state', 'it.db'))).toBeNull();

    const resumed = await held.pumpUntil(held.start(['revert', plan, '--yes']).done);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('REVERTED: every item the run moved is back where it came from, verified');
    expect((await held.moves()).length).toBeGreaterThan(before);
  });

  it('control --stop on a run of another host: written, and said to be obeyed if that run is alive', async () => {
    const { dir, plan, file } = setup('stop-other-host');
    const sim = await startSimulation({ seed: writeSeed(dir, { projects: 1, snippets: 0, groups: 0 }) });
    mkdirSync(join(dir, 'state'));
    openCheckpoint(file).close();
    const raw = new Database(file);
    raw
      .prepare(
        'INSERT INTO lock (id, pid, host, started_at, heartbeat_at, lease_ms, generation) VALUES (1, 4242, ?, 1, ?, 3600000, 1)',
      )
      .run('other-host', sim.clock.now());
    raw.close();
    const r = await sim.shardmove(['control', plan, '--stop'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^stopping: .*\nthe run holding it on other-host \(pid 4242\) obeys it within a second, if it is alive\n/,
    );
    expect(stopInRow(file)).toMatchObject({ by: 'control' });
    // Bad options are refused before the file is touched.
    expect((await sim.shardmove(['control', plan, '--stop', '--pause'], { cwd: dir })).code).toBe(2);
  });
});

describe('control --stop (separate processes, real HTTP)', { timeout: 120_000 }, () => {
  it('a stop, then a lease takeover: the old holder writes nothing (exit 5); the run that takes the lock obeys the stop', async () => {
    const { dir, plan, file } = setup('stop-takeover');
    const held = await startHeldSandbox(dir, { projects: 12, snippets: 2, groups: 1 });
    const env = sandboxEnv(held.url);
    const { run, pid } = await runWithMovesInFlight(held, dir, ['run', plan, '--lease', '10s'], 4);
    expect((await runCli(['control', plan, '--stop'], { cwd: dir, env })).code).toBe(0);
    await until(has(file, 'run.stopping'), (x) => x, 10_000);
    const atStop = await held.moves();

    // Frozen while stopping; a runner elsewhere finds its heartbeat older than the lease (its clock
    // is moved past it instead of waiting) and takes the lock over, then lets it go.
    for (let tries = 0; ; tries++) {
      process.kill(pid(), 'SIGSTOP');
      const c = openCheckpoint(file, { busyTimeoutMs: 300 });
      try {
        const now = Date.now() + 11_000;
        const got = c.acquireLock({ pid: 4242, host: 'rescheduled-pod', startedAt: now }, () => true, {
          ms: 60_000,
          now,
        });
        expect(got.reason).toBe('stale');
        c.close();
        break;
      } catch (err) {
        c.close();
        if ((err as { code?: string }).code !== 'SQLITE_BUSY' || tries > 20) throw err;
        process.kill(pid(), 'SIGCONT');
        await new Promise((r) => setTimeout(r, 30));
      }
    }
    process.kill(pid(), 'SIGCONT');
    const lost = await run;
    expect(lost.code, lost.stderr).toBe(5);
    // It left the request for whoever runs the checkpoint now; status and control say it waits.
    expect(stopInRow(file)).toMatchObject({ by: 'control' });
    expect((await runCli(['status', plan], { cwd: dir })).stdout).toMatch(
      /\n {2}stop: asked for at \S+ by shardmove control --stop, not obeyed yet: the next run obeys it at once\n/,
    );
    expect((await runCli(['control', plan], { cwd: dir })).stdout).toMatch(
      /^in force: .*\nstopping: asked for at \S+ by shardmove control --stop\n/,
    );

    const next = runCli(['run', plan], { cwd: dir, env });
    const obeyed = await held.pumpUntil(next);
    expect(obeyed.code, obeyed.stderr).toBe(6);
    const after = await held.moves();
    expect(after.map((m) => m.id)).toEqual(atStop.map((m) => m.id));
    expect(after.filter((m) => !ended(m))).toEqual([]);
    expect(intentsAfterStop(eventsOf(file))).toBe(0);
    expect(stopInRow(file)).toBeNull();
    const resumed = await held.pumpUntil(runCli(['run', plan], { cwd: dir, env }));
    expect(resumed.code, resumed.stderr).toBe(0);
  });
});
