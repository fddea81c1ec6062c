/**
 * A command delivery with real commands that misbehave: one that hangs (with a child of its own),
 * one that fails, one that writes a lot, one that is not executable, one whose path has spaces and
 * quotes, one that ignores SIGTERM, one that never reads its input. Judged from what the commands
 * wrote, the processes left, and the delivery's result.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '../src/events/run-events.js';
import { commandProblem, createExecSender, inheritedEnv } from '../src/notify/exec.js';
import { targetsOf } from '../src/notify/targets.js';
import type { Delivery } from '../src/notify/types.js';
import type { NotifyTarget } from '../src/plan/notify-field.js';
import { resolvedSecrets } from '../src/secrets/registry.js';

const SECRET = 'instance-token-Zk48wQv7Lp2n';
const FINISHED = {
  v: 1,
  seq: 12,
  at: '2026-11-24T01:12:40.552Z',
  type: 'run.finished',
  outcome: 'doneWithQuarantine',
  exitCode: 3,
  error: null,
  quarantined: 2,
} as RunEvent;

const RUN = {
  plan: 'retire-nfs',
  planFile: '/srv/plans/retire nfs/plan.yaml',
  instance: 'https://gitlab.example.com/gitlab',
  host: 'ops-1',
  checkpoint: '/srv/state/retire-nfs.db',
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardmove-notify-exec-'));
  resolvedSecrets.add(SECRET);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function script(name: string, body: string, mode = 0o755): string {
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, mode);
  return file;
}

function deliver(
  argv: string[],
  opts: { timeoutMs?: number; env?: Record<string, string>; signal?: AbortSignal } = {},
) {
  const plan: NotifyTarget = {
    kind: 'exec',
    argv,
    on: ['run.finished'],
    all: false,
    timeoutMs: opts.timeoutMs ?? 10_000,
    path: 'notify[0]',
  };
  const sender = createExecSender({
    cwd: dir,
    env: { PATH: process.env['PATH'], ...opts.env },
  });
  const d: Delivery = {
    target: targetsOf([plan])[0]!,
    event: FINISHED,
    line: 'shardmove retire-nfs on ops-1: run finished doneWithQuarantine (exit 3), 2 quarantined',
    run: RUN,
    attempt: 2,
    signal: opts.signal ?? new AbortController().signal,
  };
  return sender.send(d).finally(() => sender.close());
}

/** A process that still runs: a zombie (ended, not reaped yet by whoever inherited it) does not. */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('a command delivery', () => {
  it('gets the event as JSON on stdin and SHARDMOVE_* variables, without the run secrets in its environment', async () => {
    const out = join(dir, 'got');
    const hook = script('hook', `cat > "${out}.json"; env > "${out}.env"`);
    const result = await deliver([hook], { env: { GITLAB_TOKEN: SECRET, TEAM: 'storage', SHARDMOVE_FAKE: 'x' } });
    expect(result).toEqual({ ok: true });
    // The --events object, and which run it is about.
    expect(JSON.parse(readFileSync(`${out}.json`, 'utf8'))).toEqual({ ...FINISHED, run: RUN });
    const env = Object.fromEntries(
      readFileSync(`${out}.env`, 'utf8')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(env).toMatchObject({
      SHARDMOVE_EVENT: 'run.finished',
      SHARDMOVE_OUTCOME: 'doneWithQuarantine',
      SHARDMOVE_EXIT_CODE: '3',
      SHARDMOVE_QUARANTINED: '2',
      SHARDMOVE_SEQ: '12',
      SHARDMOVE_ATTEMPT: '2',
      SHARDMOVE_PLAN: 'retire-nfs',
      SHARDMOVE_PLAN_FILE: '/srv/plans/retire nfs/plan.yaml',
      SHARDMOVE_CHECKPOINT: '/srv/state/retire-nfs.db',
      SHARDMOVE_HOST: 'ops-1',
      SHARDMOVE_INSTANCE: 'https://gitlab.example.com/gitlab',
      SHARDMOVE_TEXT: 'shardmove retire-nfs on ops-1: run finished doneWithQuarantine (exit 3), 2 quarantined',
      TEAM: 'storage',
    });
    expect(env['GITLAB_TOKEN']).toBeUndefined();
    expect(env['SHARDMOVE_FAKE']).toBeUndefined();
    expect(readFileSync(`${out}.env`, 'utf8')).not.toContain(SECRET);
  });

  it('runs a path with spaces and quotes, and passes every argument as written, without a shell', async () => {
    const odd = join(dir, `with space 'single' "double" $HOME`);
    mkdirSync(odd);
    const out = join(dir, 'args');
    const hook = join(odd, 'hook; rm -rf');
    writeFileSync(hook, `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > "${out}"\ncat > /dev/null\n`);
    chmodSync(hook, 0o755);
    const args = ['--team', 'a b', "it's", '"q"', '$(touch pwned)', '*', '-rf'];
    expect(await deliver([hook, ...args])).toEqual({ ok: true });
    expect(readFileSync(out, 'utf8').split('\n').slice(0, -1)).toEqual(args);
    expect(existsSync(join(dir, 'pwned'))).toBe(false);
  });

  it('kills a command that hangs at its time limit, with every process it started', async () => {
    const pids = join(dir, 'hang.pids');
    const hook = script('hang', `sleep 300 & echo $! > "${pids}"; echo $$ >> "${pids}"; wait`);
    const result = await deliver([hook], { timeoutMs: 500 });
    expect(result).toMatchObject({ ok: false, permanent: false });
    expect(!result.ok && result.error).toContain('no end within 0.5s: killed with its process group');
    const started = readFileSync(pids, 'utf8').trim().split('\n').map(Number);
    expect(started).toHaveLength(2);
    await expect.poll(() => started.filter(alive)).toEqual([]);
  });

  it('kills with SIGKILL a command that ignores SIGTERM', async () => {
    const pidFile = join(dir, 'stubborn.pid');
    const hook = script('stubborn', `trap '' TERM; echo $$ > "${pidFile}"; while :; do sleep 1; done`);
    const result = await deliver([hook], { timeoutMs: 300 });
    expect(result).toMatchObject({ ok: false, permanent: false });
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await expect.poll(() => alive(pid)).toBe(false);
  });

  it('takes a failing command as a failure to try again, with its last words', async () => {
    const hook = script(
      'fails',
      `cat > /dev/null; echo "curl: (7) Failed to connect to pager" >&2; echo "token ${SECRET}" >&2; exit 7`,
    );
    const result = await deliver([hook]);
    expect(result).toMatchObject({ ok: false, permanent: false });
    const error = result.ok ? '' : result.error;
    expect(error).toContain('exit 7: curl: (7) Failed to connect to pager');
    expect(error).not.toContain(SECRET);
  });

  it('reads all a talkative command writes and keeps only its last words', async () => {
    const hook = script(
      'talks',
      'head -c 20000000 /dev/zero | tr "\\0" a; head -c 20000000 /dev/zero | tr "\\0" b >&2; echo; echo last words >&2; exit 1',
    );
    const result = await deliver([hook]);
    expect(result).toMatchObject({ ok: false, permanent: false });
    const error = result.ok ? '' : result.error;
    expect(error).toContain('last words');
    expect(error.length).toBeLessThan(2_200);
  });

  it('delivers to a command that never reads its input', async () => {
    expect(await deliver([script('deaf', 'exit 0')])).toEqual({ ok: true });
  });

  it('gives up on a command that is not executable or not there (this run only), and says why', async () => {
    const plain = script('plain', 'exit 0', 0o644);
    const r = await deliver([plain]);
    expect(r).toMatchObject({ ok: false, permanent: true });
    expect(!r.ok && r.error).toContain('cannot start: not executable');
    expect(commandProblem(plain, process.env['PATH'])).toBe(`${plain} is not executable (chmod +x it)`);
    const missing = join(dir, 'missing');
    expect(await deliver([missing])).toMatchObject({
      ok: false,
      permanent: true,
      error: 'cannot start: not found (ENOENT)',
    });
    expect(commandProblem(missing, process.env['PATH'])).toBe(`${missing} does not exist`);
    expect(commandProblem('no-such-hook-anywhere', process.env['PATH'])).toBe(
      'no-such-hook-anywhere is not found on PATH',
    );
    expect(commandProblem('sh', process.env['PATH'])).toBeNull();
  });

  it('kills the command at once when the run stops waiting', async () => {
    const pidFile = join(dir, 'cut.pid');
    const abort = new AbortController();
    const pending = deliver([script('cut', `echo $$ > "${pidFile}"; exec sleep 300`)], { signal: abort.signal });
    await expect.poll(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '').toBe(true);
    abort.abort();
    expect(await pending).toMatchObject({
      ok: false,
      error: expect.stringContaining('the run ended before it finished'),
    });
    await expect.poll(() => alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('inherits no variable that holds a secret, and none of shardmove own', () => {
    expect(inheritedEnv({ A: 'x', B: `Bearer ${SECRET}`, SHARDMOVE_TOKEN: 'y', C: undefined })).toEqual({ A: 'x' });
  });
});
