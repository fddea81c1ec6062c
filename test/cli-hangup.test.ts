/**
 * A dropped SSH session mid-drain: the terminal goes away (writes fail, it is no terminal any more)
 * and SIGHUP arrives, often twice (from the kernel, and again from the shell passing it on to its
 * jobs). Judged from the checkpoint, the events file and the sandbox's own moves: the run ends as an
 * interrupted run does (snapshot saved, `run.interrupted`, lock released, `run.finished` with exit
 * 130), and a hangup without SIGHUP (a shell that ignores it, as nohup means to) lets the run finish.
 * The runs are processes (the signals and the terminal are a process's); the sandboxes they talk to
 * are in this process, on the system clock.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import Database from 'better-sqlite3';
import { readStatus } from '../src/runtime/status.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import {
  BIN,
  invariantViolations,
  movesOf,
  runCli,
  sandboxEnv,
  storagesOf,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import { startSandbox } from '../src/sandbox/index.js';
import { movesInFlight } from './support/in-flight.js';
import { commandHere } from './support/sim-speeda.js';
import { proxiedSandboxHere } from './support/sim-speedh.js';
import { until } from './support/until.js';

/** The checkpoint's event types, oldest first. */
function eventTypes(file: string): string[] {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return store.readEvents(0, 1_000_000).map((e) => e.type);
  } finally {
    store.close();
  }
}

/** The moves in flight the checkpoint knows of: "kind:id:moveId". */
function inFlightMoves(file: string): string[] {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return (['projects', 'snippets', 'groups'] as const).flatMap((kind) =>
      store.itemsInState(kind, null, 'in_flight', 1_000_000).map((r) => `${kind}:${r.id}:${r.moveId}`),
    );
  } finally {
    store.close();
  }
}

/** The `--events` file's lines. */
const eventsFile = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** Moves in flight on the sandbox, as "kind:id:moveId", for the ones not ended. */
async function sandboxInFlight(url: string): Promise<string[]> {
  const out: string[] = [];
  for (const [kind, plural] of [
    ['project', 'projects'],
    ['snippet', 'snippets'],
    ['group', 'groups'],
  ] as const) {
    for (const m of await movesOf(url, kind))
      if (!['finished', 'failed', 'cleanup failed'].includes(m.state)) out.push(`${plural}:${m.itemId}:${m.id}`);
  }
  return out.sort();
}

const inFlightNow = (checkpoint: string) => () => Promise.resolve(movesInFlight(checkpoint));

/**
 * `shardmove run` on a terminal of its own (`script` gives it a pseudo-terminal), as an SSH session
 * runs it: a login shell (the terminal's controlling process) runs a shell that ignores hangups and
 * writes the command's pid and exit code to files. Killing `script` closes the terminal, as the end
 * of the SSH session does: the login shell gets SIGHUP and dies, and the kernel sends SIGHUP to the
 * terminal's foreground processes. `setsid` starts the command in a session of its own, which the
 * hangup does not reach (what `setsid` or `disown` do for a long run).
 */
function runOnTerminal(
  dir: string,
  args: string[],
  env: Record<string, string>,
  opts: { setsid?: boolean; foreground?: boolean } = {},
) {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [...(opts.setsid ? ['setsid'] : []), process.execPath, BIN, ...args].map(quote).join(' ');
  // In the background the command reads no terminal; in the foreground it does (a prompt), and a
  // shell that replaces itself with it writes its pid first.
  const inner = opts.foreground
    ? `trap '' HUP; sh -c 'echo $$ > node.pid; exec "$0" "$@"' ${command}; echo $? > rc`
    : `trap '' HUP; ${command} & echo $! > node.pid; wait $!; echo $? > rc`;
  // `; :` keeps the login shell from replacing itself with the inner one: it stays the controlling process.
  const script = spawn('script', ['-qfec', `sh -c ${quote(inner)}; :`, '/dev/null'], {
    cwd: dir,
    env: { ...process.env, ...env, SHELL: '/bin/sh' },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let shown = '';
  script.stdout.on('data', (c: Buffer) => (shown += c.toString('utf8')));
  onTestFinished(() => {
    script.kill('SIGKILL');
    const pid = Number(existsSync(join(dir, 'node.pid')) ? readFileSync(join(dir, 'node.pid'), 'utf8') : 0);
    if (pid > 0 && !existsSync(join(dir, 'rc'))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  });
  return {
    /** What the terminal has shown so far. */
    shown: () => shown,
    /** The terminal goes away: its master side is closed. */
    hangUp: () => script.kill('SIGKILL'),
    pid: () =>
      until(
        () =>
          Promise.resolve(existsSync(join(dir, 'node.pid')) ? Number(readFileSync(join(dir, 'node.pid'), 'utf8')) : 0),
        (p) => p > 0,
        20_000,
      ),
    exitCode: async () => {
      const rc = await until(
        () => Promise.resolve(existsSync(join(dir, 'rc')) ? readFileSync(join(dir, 'rc'), 'utf8').trim() : ''),
        (t) => t !== '',
        60_000,
      );
      if (rc === '') throw new Error('the command did not end');
      return Number(rc);
    },
  };
}

describe('a hangup (SIGHUP, a terminal that goes away) mid-drain', { timeout: 90_000 }, () => {
  it('SIGHUP, twice, ends the run as an interrupted run: exit 130, checkpoint saved, run.finished written', async () => {
    // Moves that do not end during the test: the drain is mid-way, with moves in flight, whenever it is signalled.
    const { dir, sandbox } = await proxiedSandboxHere(
      'hup',
      { moveDurationMs: 3_600_000, workers: 4 },
      {
        projects: 12,
        snippets: 2,
        groups: 2,
      },
    );
    const plan = writePlan(dir, { concurrency: 4 });
    const checkpoint = join(dir, 'state', 'it.db');
    let pid = 0;
    const run = runCli(['run', plan, '--events', 'events.jsonl'], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
      onStart: (c) => (pid = c.pid!),
    });
    expect(await until(inFlightNow(checkpoint), (n) => n === 4, 30_000)).toBe(4);
    process.kill(pid, 'SIGHUP');
    process.kill(pid, 'SIGHUP');
    const r = await run;
    expect(r.code, r.stderr).toBe(130);

    const types = eventTypes(checkpoint);
    expect(types.slice(types.lastIndexOf('run.started'))).toContain('run.interrupted');
    expect(readStatus(checkpoint, Date.now())).toMatchObject({ state: 'interrupted', lock: null });
    // Every move the sandbox has running is one the checkpoint follows: nothing was lost or left half-written.
    expect(inFlightMoves(checkpoint).sort()).toEqual(await sandboxInFlight(sandbox.url));
    const last = eventsFile(join(dir, 'events.jsonl')).at(-1);
    expect(last).toMatchObject({ type: 'run.finished', outcome: 'interrupted', exitCode: 130 });
  });

  it('SIGHUP stops a revert the same way: exit 130, its checkpoint saved, run.finished written', async () => {
    // The forward drain on a quick sandbox, both in this process (the forward run is not what is
    // judged: no process of its own needed); the revert, a process, on the same state with moves
    // that do not end.
    const dir = tempDir('hup-revert');
    const db = join(dir, 'sandbox.db');
    const seed = writeSeed(dir, { projects: 8, snippets: 1, groups: 1 });
    const quick = await startSandbox({ db, seed, moveDurationMs: 20, workers: 10 });
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const plan = writePlan(dir, { concurrency: 4 });
    const forward = await commandHere(['run', plan], { cwd: dir, env: sandboxEnv(quick.url) });
    await quick.close();
    expect(forward.code, forward.stderr).toBe(0);
    // The same instance, on its own address: a revert works only on its forward run's instance.
    const slow = await startSandbox({ port: quick.port, db, moveDurationMs: 3_600_000, workers: 4 });
    onTestFinished(() => slow.close());
    const revertDb = join(dir, 'state', 'it.revert.db');
    let pid = 0;
    const revert = runCli(['revert', plan, '--yes', '--events', 'events.jsonl'], {
      cwd: dir,
      env: sandboxEnv(slow.url),
      onStart: (c) => (pid = c.pid!),
    });
    expect(await until(inFlightNow(revertDb), (n) => n === 4, 30_000)).toBe(4);
    process.kill(pid, 'SIGHUP');
    const r = await revert;
    expect(r.code, r.stderr).toBe(130);
    expect(readStatus(revertDb, Date.now())).toMatchObject({ state: 'interrupted', lock: null });
    expect(inFlightMoves(revertDb).sort()).toEqual(await sandboxInFlight(slow.url));
    expect(eventsFile(join(dir, 'events.jsonl')).at(-1)).toMatchObject({
      type: 'run.finished',
      outcome: 'interrupted',
      exitCode: 130,
    });
  });

  it('the terminal goes away (the kernel sends SIGHUP): the same, and the exit code is 130 (no crash on the dead terminal)', async () => {
    const { dir, sandbox } = await proxiedSandboxHere(
      'hup-tty',
      { moveDurationMs: 3_600_000, workers: 4 },
      {
        projects: 12,
        snippets: 2,
        groups: 2,
      },
    );
    writePlan(dir, { concurrency: 4 });
    const checkpoint = join(dir, 'state', 'it.db');
    const term = runOnTerminal(dir, ['run', 'plan.yaml', '--events', 'events.jsonl'], sandboxEnv(sandbox.url));
    const pid = await term.pid();
    expect(await until(inFlightNow(checkpoint), (n) => n === 4, 30_000)).toBe(4);
    term.hangUp();
    process.kill(pid, 'SIGHUP');
    expect(await term.exitCode()).toBe(130);
    expect(readStatus(checkpoint, Date.now())).toMatchObject({ state: 'interrupted', lock: null });
    expect(inFlightMoves(checkpoint).sort()).toEqual(await sandboxInFlight(sandbox.url));
    expect(eventsFile(join(dir, 'events.jsonl')).at(-1)).toMatchObject({
      type: 'run.finished',
      outcome: 'interrupted',
      exitCode: 130,
    });
  });

  it('a terminal that goes away at a confirmation prompt: nothing is changed, and the exit is clean (not a crash)', async () => {
    const dir = tempDir('hup-prompt');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writePlan(dir);
    // A checkpoint whose lock another host holds: `unlock` shows it and asks before removing it.
    const checkpoint = join(dir, 'state', 'it.db');
    openCheckpoint(checkpoint).close();
    const raw = new Database(checkpoint);
    raw
      .prepare(
        'INSERT INTO lock (id, pid, host, started_at, heartbeat_at, lease_ms, generation) VALUES (1, 4242, ?, 1, ?, 3600000, 1)',
      )
      .run('other-host', Date.now());
    raw.close();
    const term = runOnTerminal(dir, ['unlock', 'plan.yaml'], {}, { foreground: true });
    expect(
      await until(
        () => Promise.resolve(term.shown()),
        (t) => t.includes('remove it?'),
        20_000,
      ),
    ).toContain('remove it?');
    term.hangUp();
    expect(await term.exitCode()).toBe(1);
    expect(readStatus(checkpoint, Date.now()).lock).toMatchObject({ pid: 4242, host: 'other-host' });
  });

  it('a run in a session of its own (setsid) on a terminal that goes away: no SIGHUP reaches it, it finishes, exit 0', async () => {
    const { dir, sandbox, proxy } = await proxiedSandboxHere(
      'hup-nohup',
      { moveDurationMs: 20, workers: 10 },
      {
        projects: 20,
        snippets: 4,
        groups: 2,
      },
    );
    writePlan(dir, { concurrency: 4 });
    // Held at its first move's POST (the sandbox never sees it) until the terminal is gone: the drain
    // then goes on, drawing progress and the final report on a terminal that is no more.
    const held = proxy.arm({
      match: (q) => q.method === 'POST' && /repository_storage_moves/.test(q.url),
      forward: false,
    });
    const term = runOnTerminal(dir, ['run', 'plan.yaml', '--events', 'events.jsonl'], sandboxEnv(proxy.url), {
      setsid: true,
    });
    await term.pid();
    await held;
    term.hangUp();
    proxy.release();
    expect(await term.exitCode()).toBe(0);
    expect(eventsFile(join(dir, 'events.jsonl')).at(-1)).toMatchObject({ type: 'run.finished', exitCode: 0 });
    for (const kind of ['projects', 'snippets', 'groups'] as const)
      expect(
        [...(await storagesOf(sandbox.url, kind)).values()].filter((s) => s !== 'cluster'),
        kind,
      ).toEqual([]);
    for (const kind of ['project', 'snippet', 'group'] as const)
      expect(invariantViolations(await movesOf(sandbox.url, kind), 'cluster'), kind).toEqual([]);
  });
});
