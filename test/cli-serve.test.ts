/**
 * `shardmove serve` as a process: what it prints, what it serves, how it ends, and what it refuses.
 * The browser side (a running drain, clicks) is test/serve-browser.test.ts; the routes' guards are
 * src/serve/server.test.ts.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxProcess } from './support/cli-harness.js';
import { until } from './support/until.js';
import { BIN, runCli, sandboxEnv, startSandboxProcess, tempDir, writePlan, writeSeed } from './support/cli-harness.js';

interface Serving {
  url: string;
  base: string;
  token: string;
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

async function serve(args: string[], cwd: string): Promise<Serving> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c) => (stderr += String(c)));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const url = await new Promise<string>((done, fail) => {
    createInterface({ input: child.stdout! }).once('line', done);
    void exited.then((code) => fail(new Error(`serve exited ${code}: ${stderr}`)));
  });
  const [base, token] = url.split('/?token=') as [string, string];
  // Said on stderr before the URL; another pipe, so it may arrive a moment later.
  await until(
    () => Promise.resolve(stderr),
    (t) => t.includes('Ctrl-C ends it'),
    10_000,
  );
  return { url, base, token, child, stderr: () => stderr, exited };
}

async function api(s: Serving, path: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${s.base}${path}`, { headers: { Authorization: `Bearer ${s.token}` } });
  return { status: res.status, body: await res.json() };
}

let dir: string;
let plan: string;
let statusJson: unknown;
let sandbox: SandboxProcess | undefined;

describe('shardmove serve', { timeout: 90_000 }, () => {
  beforeAll(async () => {
    dir = tempDir('serve-cli');
    const seed = writeSeed(dir, { projects: 12, snippets: 2, groups: 1 });
    sandbox = await startSandboxProcess(['--move-duration', '20', '--seed', seed]);
    plan = writePlan(dir, { concurrency: 4 });
    const run = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(run.code, run.stderr).toBe(0);
    statusJson = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir })).stdout);
  }, 90_000);
  afterAll(async () => {
    await sandbox?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints its URL with the token as its first line, serves status --json as it is, and ends 0 on Ctrl-C and SIGTERM', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const s = await serve([plan], dir);
      expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{43}$/);
      expect(s.stderr()).toContain('the console serves 1 run');
      expect(s.stderr()).not.toContain(s.token);
      const list = (await api(s, '/api/runs')).body as { runs: { id: string; name: string; headline: string }[] };
      expect(list.runs).toHaveLength(1);
      expect(list.runs[0]).toMatchObject({ name: 'it', headline: 'DONE' });
      const doc = await api(s, `/api/runs/${list.runs[0]!.id}`);
      expect(doc.status).toBe(200);
      // The same document; only the rate moves with the clock (moves per minute over the run's age so far).
      const timeless = (d: unknown) => ({ ...(d as object), movesPerMinute: 0 });
      expect(timeless(doc.body)).toEqual(timeless(statusJson));
      const report = await api(s, `/api/runs/${list.runs[0]!.id}/report`);
      expect(report.status).toBe(200);
      expect(report.body).toMatchObject({ plan: 'it', outcome: { state: 'done' } });
      const weights = (await api(s, `/api/runs/${list.runs[0]!.id}/weights`)).body as { lines: string[] };
      expect(weights.lines.find((l) => l.startsWith('Weights now: '))).toMatch(/cluster=100/);
      expect(weights.lines.some((l) => l.startsWith('Weights before: '))).toBe(true);
      const caps = (await api(s, `/api/runs/${list.runs[0]!.id}/caps`)).body as { caps: { limit: string }[] };
      expect(caps.caps.at(-1)?.limit).toBe('plan');
      s.child.kill(signal);
      expect(await s.exited).toBe(0);
      expect(s.stderr()).not.toContain(s.token);
    }
    // The token is in no file the run or the console keeps.
    const state = join(dir, 'state');
    for (const f of readdirSync(state)) expect(readFileSync(join(state, f)).includes('token=')).toBe(false);
  });

  it('serves every checkpoint under --state-dir, never opens a FIFO named like one, and names a plan that has not run', async () => {
    const root = tempDir('serve-dir');
    mkdirSync(join(root, 'team a', 'state'), { recursive: true });
    copyFileSync(join(dir, 'state', 'it.db'), join(root, 'team a', 'state', `it's "mine" $(x).db`));
    // Opening a FIFO would block the console for good.
    expect(spawnSync('mkfifo', [join(root, 'pipe.db')]).status).toBe(0);
    symlinkSync(root, join(root, 'team a', 'loop'));
    const other = join(root, 'later.yaml');
    writeFileSync(other, readFileSync(plan, 'utf8').replace('name: it', 'name: later'));
    const s = await serve(['--state-dir', root, other], root);
    const runs = (
      (await api(s, '/api/runs')).body as { runs: { id: string; name: string; state: string; file: string }[] }
    ).runs;
    expect(runs.map((r) => [r.name, r.state])).toEqual([
      ['later', 'no checkpoint'],
      ['it', 'done'],
    ]);
    expect(runs[1]!.file).toContain(`it's "mine" $(x).db`);
    const missing = await api(s, `/api/runs/${runs[0]!.id}`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'SHARDMOVE_NO_CHECKPOINT' });
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('says what to serve when given nothing, and names a port it cannot take (exit 2)', async () => {
    const none = await runCli(['serve'], { cwd: dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('serve: say what to serve');
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    onTestFinished(() => new Promise<void>((r) => busy.close(() => r())));
    const port = (busy.address() as AddressInfo).port;
    const taken = await runCli(['serve', plan, '--port', String(port)], { cwd: dir });
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain(`serve: cannot listen on 127.0.0.1:${port}`);
    expect(taken.stdout).toBe('');
    const bad = await runCli(['serve', plan, '--port', '70000'], { cwd: dir });
    expect(bad.code).toBe(2);
  });

  it('warns when told to listen beyond this machine', async () => {
    const s = await serve([plan, '--host', '0.0.0.0', '--read-only'], dir);
    expect(s.stderr()).toContain('warning: --host 0.0.0.0 lets other machines reach the console');
    expect(s.stderr()).toContain('read-only (no control)');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });
});
