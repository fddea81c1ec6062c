/**
 * `notify:` end to end: `shardmove run` against the sandbox, a local webhook receiver and a local
 * command. A run's story reaches both; a receiver that is down leaves its
 * notifications in the checkpoint (said at the end and by `status`) and the next run delivers them;
 * a run killed with SIGKILL while a delivery hangs delivers everything on resume, at least once; a
 * Ctrl-C while a command is delivering lets it finish and then says how the run ended; a delivery
 * that hangs never holds the drain up; a dry run sends nothing. Judged from what the receiver and
 * the command got, the sandbox's moves and the checkpoint's rows.
 *
 * Most of it on the in-process harness (test/support/sim-harness.ts): the executable's command line
 * against a sandbox on one simulated clock, so the moves, the polls and the deliveries' backoff cost
 * no real time (the receiver and the command are real). The SIGKILL during a delivery and the
 * Ctrl-C while a command delivers stay separate `shardmove run` processes, against an in-process
 * sandbox on the system clock: a kill -9 and a signal are what a process shows.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { RunEventSchema } from '../src/events/run-events.js';
import type { RunEvent } from '../src/events/run-events.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import {
  fromDb,
  movesOf,
  runCli as runProcess,
  sandboxEnv,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';
import type { Simulation } from './support/sim-harness.js';
import { startReceiver } from './support/notify-receiver.js';
import type { Receiver } from './support/notify-receiver.js';

const HOOK_TOKEN = 'hook-token-Rw73LpXz0qNd';

let sandbox: RunningSandbox;
/** `shardmove` on the simulation of the test (the tests on processes call `runProcess`). */
let runCli: Simulation['shardmove'];
let dir: string;
beforeAll(() => {
  dir = tempDir('notify-run');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** The sandbox of every test: each moves the whole inventory, so each has one of its own. */
const sandboxOptions = (moveDurationMs: number) => ({
  seed: writeSeed(dir, { projects: 40, snippets: 4, groups: 2 }),
  workers: 10,
  moveDurationMs,
  faults: { brokenItems: ['project:3'], seed: 7 },
});

const env = () => ({ ...sandboxEnv(sandbox.url), HOOK_TOKEN });

/** A plan for the sandbox named `name`, with `notify` (YAML lines) appended. */
function planWith(name: string, notify: string[], concurrency = 4): string {
  const file = writePlan(dir, { name, concurrency });
  const own = join(dir, `${name}.yaml`);
  writeFileSync(own, `${readFileSync(file, 'utf8')}notify:\n${notify.map((l) => `  ${l}`).join('\n')}\n`);
  return own;
}

const events = (r: Receiver): RunEvent[] => r.seen.map((s) => RunEventSchema.parse(JSON.parse(s.body)));

interface DeliveryRow {
  target: string;
  event_seq: number;
  attempts: number;
  delivered_at: number | null;
  type: string;
  body: string;
}
const deliveries = (name: string) =>
  fromDb<DeliveryRow>(
    join(dir, 'state', `${name}.db`),
    'SELECT d.target, d.event_seq, d.attempts, d.delivered_at, e.type, e.body FROM notify_deliveries d JOIN notify_events e ON e.seq = d.event_seq ORDER BY d.target, d.event_seq',
  );

/** A command that appends each event it gets to `<name>.jsonl`; with `block`, it waits for `<name>.release` first on run.started. */
function hook(name: string, block = false): string {
  const file = join(dir, `${name}.sh`);
  const log = join(dir, `${name}.jsonl`);
  const wait = block
    ? `if [ "$SHARDMOVE_EVENT" = run.started ]; then touch "${dir}/${name}.started"; while [ ! -f "${dir}/${name}.release" ]; do sleep 0.05; done; fi`
    : '';
  writeFileSync(file, `#!/bin/sh\n${wait}\ncat >> "${log}"\n`);
  chmodSync(file, 0o755);
  return file;
}
const hookEvents = (name: string): RunEvent[] =>
  existsSync(join(dir, `${name}.jsonl`))
    ? readFileSync(join(dir, `${name}.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .map((l) => RunEventSchema.parse(JSON.parse(l)))
    : [];

describe('notify in a real run (in process, one simulated clock)', { timeout: 120_000 }, () => {
  beforeEach(async () => {
    const sim = await startSimulation(sandboxOptions(150));
    sandbox = sim.sandbox;
    runCli = sim.shardmove;
  });

  it('tells the run to a webhook and a command, the token in a header only', async () => {
    const receiver = await startReceiver();
    const slack = await startReceiver();
    const plan = planWith('told', [
      `- on: ['*']`,
      `  webhook: {url: '${receiver.url}/hooks/shardmove', token: '\${HOOK_TOKEN}'}`,
      `- on: [run.started, move.quarantined, run.finished]`,
      `  exec: [${hook('told')}]`,
      `- on: [run.finished]`,
      `  webhook: {url: '${slack.url}/slack', format: slack}`,
    ]);
    const run = await runCli(['run', plan], { cwd: dir, env: env() });
    expect(run.code, run.stderr).toBe(3);
    // Every notification names the run it is about, in the body and on the command's standard input.
    const about = {
      plan: 'told',
      planFile: plan,
      instance: sandbox.url.replace(/\/+$/, ''),
      host: hostname(),
      checkpoint: join(dir, 'state', 'told.db'),
    };
    for (const s of receiver.seen) expect((JSON.parse(s.body) as { run: unknown }).run).toEqual(about);
    const stdin = readFileSync(join(dir, 'told.jsonl'), 'utf8').trim().split('\n');
    expect(stdin).toHaveLength(3);
    for (const line of stdin) expect((JSON.parse(line) as { run: unknown }).run).toEqual(about);
    // Slack's text keeps its one line, naming the plan and the host.
    expect(JSON.parse(slack.seen[0]!.body)).toEqual({
      text: `shardmove told on ${hostname()}: run finished doneWithQuarantine (exit 3), 1 quarantined`,
    });
    const got = events(receiver);
    expect(got[0]).toMatchObject({ type: 'run.started', plan: 'told', resumed: false });
    expect(got.at(-1)).toMatchObject({
      type: 'run.finished',
      outcome: 'doneWithQuarantine',
      exitCode: 3,
      quarantined: 1,
    });
    expect(got.filter((e) => e.type === 'progress')).toEqual([]);
    expect(got.filter((e) => e.type === 'move.quarantined')).toEqual([
      expect.objectContaining({ kind: 'projects', id: 3 }),
    ]);
    expect(got.filter((e) => e.type === 'move.finished').length).toBeGreaterThan(30);
    // One attempt each, in order: seq counts up without a gap.
    expect(got.map((e) => e.seq)).toEqual(got.map((_, i) => i + 1));
    for (const s of receiver.seen) {
      expect(s.headers['authorization']).toBe(`Bearer ${HOOK_TOKEN}`);
      expect(s.body).not.toContain(HOOK_TOKEN);
    }
    expect(hookEvents('told').map((e) => e.type)).toEqual(['run.started', 'move.quarantined', 'run.finished']);
    expect(hookEvents('told').at(-1)).toMatchObject({ outcome: 'doneWithQuarantine', exitCode: 3 });
    // Everything delivered, and recorded as such; the token nowhere in the checkpoint or the log.
    const rows = deliveries('told');
    expect(rows.length).toBe(got.length + 3 + 1);
    expect(rows.every((r) => r.delivered_at !== null && r.attempts === 1)).toBe(true);
    for (const f of readdirSync(join(dir, 'state')).filter((f) => f.startsWith('told.')))
      expect(readFileSync(join(dir, 'state', f)).includes(HOOK_TOKEN), f).toBe(false);
  });

  it('keeps no piece of a URL key a receiver quotes, nor of the token a hook prints across its kept end, in the checkpoint, stderr or status', async () => {
    const key = 'x9c8v7b6n5m4q3w2e1r0';
    const token = sandboxEnv(sandbox.url)['SHARDMOVE_TOKEN']!;
    const receiver = await startReceiver((req, res) => {
      res.statusCode = 400;
      res.end(`${'-'.repeat(1_990)} bad request: POST ${req.url} HTTP/1.1`);
    });
    // 26 characters of the token inside the output's last 2 KiB, the rest before it.
    writeFileSync(join(dir, 'said.txt'), `${'='.repeat(3_000)} token ${token}${'='.repeat(2_048 - 26)}`);
    const talk = join(dir, 'talk.sh');
    writeFileSync(talk, `#!/bin/sh\ncat > /dev/null\ncat "${dir}/said.txt"\nexit 1\n`);
    chmodSync(talk, 0o755);
    const plan = planWith('echoed', [
      `- on: [run.finished]`,
      `  webhook: {url: '\${KEYED_URL}'}`,
      `- on: [run.finished]`,
      `  exec: [${talk}]`,
    ]);
    const keyed = { ...env(), KEYED_URL: `${receiver.url}/hooks?private_token=${key}` };
    const run = await runCli(['run', plan], { cwd: dir, env: keyed });
    expect(run.code, run.stderr).toBe(3);
    expect(receiver.seen[0]!.url).toBe(`/hooks?private_token=${key}`);
    const status = await runCli(['status', plan], { cwd: dir, env: keyed });
    const stored = readdirSync(join(dir, 'state'))
      .filter((f) => f.startsWith('echoed.'))
      .map((f) => readFileSync(join(dir, 'state', f)).toString('latin1'));
    expect(run.stderr).toContain('notify: webhook');
    expect(status.stdout).toContain('HTTP 400');
    const pieces = (secret: string, from = 0) =>
      Array.from({ length: secret.length - from - 5 }, (_, i) => secret.slice(from + i, from + i + 6));
    for (const text of [run.stdout, run.stderr, status.stdout, status.stderr, ...stored]) {
      for (const p of pieces(key)) expect(text).not.toContain(p);
      // The token's body; its prefix (glpat-) is every token's.
      for (const p of pieces(token, 6)) expect(text).not.toContain(p);
    }
  });

  it('keeps what a receiver that is down did not take, says so, and delivers it on the next run', async () => {
    const receiver = await startReceiver((_, res) => {
      res.statusCode = 503;
      res.end('maintenance');
    });
    const plan = planWith('down', [
      `- on: [run.started, move.quarantined, run.finished]`,
      `  webhook: {url: '${receiver.url}/hook'}`,
    ]);
    const first = await runCli(['run', plan], { cwd: dir, env: env() });
    expect(first.code, first.stderr).toBe(3);
    expect(first.stderr).toContain(
      `warning: notify: webhook ${receiver.url}: HTTP 503: maintenance (tried again with backoff;`,
    );
    expect(first.stderr).toContain(
      `note: notify: 3 notification(s) not delivered; the next run sends them:\n  webhook ${receiver.url}: 3 waiting, the oldest seq 1 (run.started)\n`,
    );
    expect(deliveries('down').map((r) => [r.type, r.delivered_at])).toEqual([
      ['run.started', null],
      ['move.quarantined', null],
      ['run.finished', null],
    ]);
    const status = await runCli(['status', plan], { cwd: dir, env: env() });
    expect(status.stdout).toContain('Notifications not delivered (3):');
    expect(status.stdout).toContain(`webhook ${receiver.url}: 3 waiting, the oldest seq 1 (run.started)`);
    expect(status.stdout).toMatch(
      /attempt\(s\); the next run of this plan sends them\n {4}last: HTTP 503: maintenance\n/,
    );
    const json = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir, env: env() })).stdout) as {
      notifications: { waiting: number }[];
    };
    expect(json.notifications).toEqual([expect.objectContaining({ waiting: 3, label: `webhook ${receiver.url}` })]);

    const before = receiver.seen.length;
    receiver.answer = (_, res) => res.end('ok');
    const second = await runCli(['run', plan], { cwd: dir, env: env() });
    expect(second.code, second.stderr).toBe(3);
    expect(second.stderr).not.toContain('not delivered');
    const delivered = events(receiver).slice(before);
    expect(delivered.map((e) => `${e.type}#${e.seq}`)).toEqual([
      'run.started#1',
      'move.quarantined#2',
      'run.finished#3',
      'run.started#4',
      'run.finished#5',
    ]);
    expect(deliveries('down').every((r) => r.delivered_at !== null)).toBe(true);
    expect((await runCli(['status', plan], { cwd: dir, env: env() })).stdout).not.toContain('Notifications');
  });

  it('sends nothing in a dry run, and says so', async () => {
    const receiver = await startReceiver();
    const plan = planWith('dry', [`- on: ['*']`, `  webhook: {url: '${receiver.url}/hook'}`]);
    const dry = await runCli(['run', plan, '--dry-run'], { cwd: dir, env: env() });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toContain('note: notify: a dry run sends no notification');
    expect(receiver.seen).toEqual([]);
  });
});

describe('notify in a real run (separate run processes)', { timeout: 120_000 }, () => {
  /** An in-process sandbox on the system clock, for a run process (closed when the test ends). */
  const realSandbox = async (moveDurationMs: number) => {
    sandbox = await startSandbox(sandboxOptions(moveDurationMs));
    onTestFinished(() => sandbox.close());
  };

  it('delivers on resume what a run killed during a delivery left, at least once', async () => {
    // Short moves: the kill waits for a delivery, not for a move; the resume then drains quickly.
    await realSandbox(30);
    let held: (() => void) | null = null;
    const receiver = await startReceiver((req, res) => {
      // The first move that ends is never answered: the run is killed while it waits.
      if (!held && (JSON.parse(req.body) as { type: string }).type === 'move.finished') held = () => res.destroy();
      else res.end('ok');
    });
    const plan = planWith('killed', [`- on: ['*']`, `  webhook: {url: '${receiver.url}/hook'}`], 2);
    let child: ChildProcess | undefined;
    const first = runProcess(['run', plan], { cwd: dir, env: env(), onStart: (c) => (child = c) });
    await expect.poll(() => held !== null, { timeout: 60_000 }).toBe(true);
    child!.kill('SIGKILL');
    expect((await first).code).toBeNull();
    const heldEvent = events(receiver).at(-1)!;
    expect(heldEvent.type).toBe('move.finished');
    held!();
    receiver.answer = (_, res) => res.end('ok');

    const resumed = await runProcess(['run', plan], { cwd: dir, env: env() });
    expect(resumed.code, resumed.stderr).toBe(3);
    const got = events(receiver);
    // The held one again, the very same object, then everything after it.
    expect(got.filter((e) => e.seq === heldEvent.seq)).toEqual([heldEvent, heldEvent]);
    const rows = deliveries('killed');
    expect(rows.every((r) => r.delivered_at !== null)).toBe(true);
    expect(new Set(got.map((e) => e.seq))).toEqual(new Set(rows.map((r) => r.event_seq)));
    // Every move the checkpoint's log says ended, in either process, reached the receiver.
    const ended = fromDb<{ data: string }>(
      join(dir, 'state', 'killed.db'),
      "SELECT data FROM events WHERE type = 'move.finished'",
    );
    const told = new Set(got.flatMap((e) => (e.type === 'move.finished' ? [e.moveId] : [])));
    for (const e of ended) expect(told.has((JSON.parse(e.data) as { moveId: number }).moveId)).toBe(true);
    expect(got.at(-1)).toMatchObject({ type: 'run.finished', exitCode: 3 });
  });

  it('lets a command finish its delivery after Ctrl-C, then says the run was interrupted; the drain never waits for it', async () => {
    // Moves long enough that the drain is still going when the command holding its delivery is seen.
    await realSandbox(150);
    const plan = planWith('ctrlc', [`- on: [run.started, run.finished]`, `  exec: [${hook('ctrlc', true)}]`], 2);
    let child: ChildProcess | undefined;
    const run = runProcess(['run', plan], { cwd: dir, env: env(), onStart: (c) => (child = c) });
    await expect.poll(() => existsSync(join(dir, 'ctrlc.started')), { timeout: 30_000 }).toBe(true);
    // The command still holds its first delivery; the drain goes on regardless.
    const finishedBefore = (await movesOf(sandbox.url, 'project')).filter((m) => m.state === 'finished').length;
    await expect
      .poll(async () => (await movesOf(sandbox.url, 'project')).filter((m) => m.state === 'finished').length, {
        timeout: 30_000,
      })
      .toBeGreaterThan(finishedBefore);
    expect(hookEvents('ctrlc')).toEqual([]);
    child!.kill('SIGINT');
    writeFileSync(join(dir, 'ctrlc.release'), '');
    const ended = await run;
    expect(ended.code, ended.stderr).toBe(130);
    expect(hookEvents('ctrlc').map((e) => e.type)).toEqual(['run.started', 'run.finished']);
    expect(hookEvents('ctrlc')[1]).toMatchObject({ outcome: 'interrupted', exitCode: 130 });
    expect(deliveries('ctrlc').every((r) => r.delivered_at !== null)).toBe(true);
  });
});
