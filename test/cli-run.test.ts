/**
 * `shardmove run` and `status` end to end over real HTTP, judged by the sandbox's own view of where
 * every repository is and which moves it recorded.
 *
 * Most of it on the in-process harness (test/support/sim-harness.ts): the executable's command
 * line against a sandbox on one simulated clock, so the moves' durations, the polls, the backoffs
 * and a 5-second token lifetime cost no real time; their subject is the run, not the process. The
 * kill -9 at named moments stays on separate processes (the sandbox and the compiled CLI): only a
 * process can be killed, and `status` must see a live one (its pid) and then a dead one.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { renderStatus } from '../src/report/status.js';
import { readStatus } from '../src/runtime/status.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { StoredEvent } from '../src/store/types.js';
import type { SandboxProcess } from './support/cli-harness.js';
import {
  ADMIN_TOKEN,
  flat,
  invariantViolations,
  movesOf,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  storagesOf,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import { OAUTH } from './support/cli-harness.js';
import type { SeenRequest, Trap } from './support/hold-proxy.js';
import { startHoldProxy } from './support/hold-proxy.js';
import type { Simulation } from './support/sim-harness.js';
import { seededSimulation } from './support/sim-speeda.js';
import type { RunningSandbox } from '../src/sandbox/index.js';

const KINDS = ['projects', 'snippets', 'groups'] as const;
const SOURCES = new Set(['nfs-1', 'nfs-2', 'default']);

/** A sandbox process and a working directory for one test, both removed when it ends. */
async function setup(
  name: string,
  sandboxArgs: string[] | null,
  seed?: Parameters<typeof writeSeed>[1],
): Promise<{ sandbox: SandboxProcess; dir: string }> {
  const dir = tempDir(name);
  const args =
    sandboxArgs && !sandboxArgs.includes('--seed') ? [...sandboxArgs, '--seed', writeSeed(dir, seed)] : sandboxArgs;
  const sandbox = args ? await startSandboxProcess(args) : (null as unknown as SandboxProcess);
  onTestFinished(async () => {
    await sandbox?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { sandbox, dir };
}

/**
 * A sandbox on a simulated clock, seeded in a fresh directory (removed when the test ends), and
 * `shardmove` command lines on the same clock.
 */
async function simSetup(
  name: string,
  sandboxOptions: { moveDurationMs?: number; workers?: number; faults?: { brokenItems: string[] } },
  seed?: Parameters<typeof writeSeed>[1],
): Promise<{ sandbox: RunningSandbox; dir: string; runCli: Simulation['shardmove'] }> {
  const { dir, sim } = await seededSimulation(name, seed ?? {}, sandboxOptions);
  return { sandbox: sim.sandbox, dir, runCli: sim.shardmove };
}

/** The checkpoint's events (empty when it does not exist yet or is not migrated yet). */
function eventsOf(file: string): StoredEvent[] {
  if (!existsSync(file)) return [];
  try {
    const store = openCheckpoint(file, { readOnly: true });
    try {
      return store.readEvents(0, 1_000_000);
    } finally {
      store.close();
    }
  } catch {
    return [];
  }
}

/** Waits for an event of `type` after sequence number `afterSeq`. */
async function waitForEvent(file: string, type: string, afterSeq: number, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (eventsOf(file).some((e) => e.seq > afterSeq && e.type === type)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${type} event`);
}

/** The step the checkpoint's saved snapshot is in (where a killed run died). */
function savedStep(file: string): string | null {
  const store = openCheckpoint(file, { readOnly: true });
  try {
    return (store.loadRun()?.snapshot as { context?: { step?: string } } | undefined)?.context?.step ?? null;
  } finally {
    store.close();
  }
}

/** Item counts per state in the checkpoint (all kinds and sources). */
function itemStates(file: string): Record<string, number> {
  if (!existsSync(file)) return {};
  const store = openCheckpoint(file, { readOnly: true });
  try {
    const out: Record<string, number> = { scheduling: 0, in_flight: 0 };
    for (const c of store.summary(Date.now()).counts) out[c.state] = (out[c.state] ?? 0) + c.n;
    return out;
  } finally {
    store.close();
  }
}

const LISTED_KIND: Record<string, string> = { projects: 'projects', 'snippets/all': 'snippets', groups: 'groups' };

/** Whether a listing request belongs to a re-enumeration round (2+) that the checkpoint shows as running. */
function isReEnumeration(file: string, url: string): boolean {
  const m = /^\/api\/v4\/(projects|snippets\/all|groups)\?(.*)$/.exec(url);
  const e = eventsOf(file)
    .filter((x) => x.type === 'enumerate.started' || x.type === 'enumerate.finished')
    .at(-1);
  if (!m || !e || e.type !== 'enumerate.started' || Number(e.data['round']) < 2) return false;
  return (
    e.data['kind'] === LISTED_KIND[m[1]!] && new URLSearchParams(m[2]).get('repository_storage') === e.data['source']
  );
}
const lastStep = (file: string): unknown =>
  eventsOf(file)
    .filter((e) => e.type === 'step.started')
    .at(-1)?.data['step'];

async function snapshotOf(url: string) {
  const storages = Object.fromEntries(
    await Promise.all(KINDS.map(async (k) => [k, Object.fromEntries(await storagesOf(url, k))] as const)),
  );
  const moves = await Promise.all((['project', 'snippet', 'group'] as const).map((k) => movesOf(url, k)));
  const settings = await fetch(`${url}/api/v4/application/settings`, { headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN } });
  const weights = ((await settings.json()) as { repository_storages_weighted: Record<string, number> })
    .repository_storages_weighted;
  return { storages, moves, weights };
}

async function expectAllOnCluster(url: string) {
  for (const kind of KINDS) {
    const all = await storagesOf(url, kind);
    expect(all.size, kind).toBeGreaterThan(0);
    expect(
      [...all.values()].filter((s) => s !== 'cluster'),
      kind,
    ).toEqual([]);
  }
}

describe('shardmove run (in process, one simulated clock, real HTTP)', { timeout: 60_000 }, () => {
  it('throttled: moves every project, snippet and group wiki, verifies, exits 0; a second run does nothing', async () => {
    const { sandbox, dir, runCli } = await simSetup('run-throttled', { moveDurationMs: 30, workers: 20 });
    const plan = writePlan(dir);
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.stderr).toBe('');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('DONE: every repository moved and verified');
    expect(r.stdout).toContain('Verification: passed');
    expect(existsSync(join(dir, 'state', 'it.db'))).toBe(true);
    expect(existsSync(join(dir, 'state', 'it.log'))).toBe(true);
    await expectAllOnCluster(sandbox.url);
    const before = await snapshotOf(sandbox.url);

    const again = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(again.code, again.stderr).toBe(0);
    expect((await snapshotOf(sandbox.url)).moves).toEqual(before.moves);
  });

  it('bulk: one POST per kind and storage, then polling; everything moves and verifies', async () => {
    const { sandbox, dir, runCli } = await simSetup('run-bulk', { moveDurationMs: 30, workers: 50 });
    const plan = writePlan(dir, { mode: 'bulk' });
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.code, r.stderr).toBe(0);
    await expectAllOnCluster(sandbox.url);
  });

  it('broken items end quarantined (exit 3) with their reasons in status --json', async () => {
    const { sandbox, dir, runCli } = await simSetup('run-broken', {
      moveDurationMs: 20,
      workers: 20,
      faults: { brokenItems: ['project:3,snippet:5'] },
    });
    const plan = writePlan(dir, { from: ['nfs-1', 'nfs-2', 'default'] });
    const r = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toContain('DONE WITH QUARANTINED ITEMS');
    const status = await runCli(['status', plan, '--json'], { cwd: dir });
    expect(status.code, status.stderr).toBe(0);
    const report = JSON.parse(status.stdout) as {
      state: string;
      quarantined: { kind: string; id: number; reason: string; attempts: number }[];
    };
    expect(report.state).toBe('doneWithQuarantine');
    expect(report.quarantined.map((q) => `${q.kind}:${q.id}`).sort()).toEqual(['projects:3', 'snippets:5']);
    for (const q of report.quarantined) {
      expect(q.reason.length).toBeGreaterThan(0);
      expect(q.attempts).toBe(2);
    }
    const text = await runCli(['status', plan], { cwd: dir });
    expect(text.stdout).toMatch(/Quarantined \(2\):/);
  });

  it('--dry-run changes nothing on the sandbox and reports an estimate', async () => {
    const { sandbox, dir, runCli } = await simSetup('run-dry', { moveDurationMs: 30 });
    const plan = writePlan(dir);
    const before = await snapshotOf(sandbox.url);
    const r = await runCli(['run', plan, '--dry-run'], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('nothing was changed');
    expect(r.stdout).toMatch(/projects on nfs-1: \d+/);
    expect(r.stdout).toContain('estimated duration');
    expect(flat(r.stdout)).toMatch(/from repository sizes \(.*largest .*\), assuming/);
    expect(await snapshotOf(sandbox.url)).toEqual(before);
    const items = Object.values(before.storages.projects as Record<number, string>);
    expect(items.some((s) => SOURCES.has(s))).toBe(true);
    expect(existsSync(join(dir, 'state', 'it.dry-run.db'))).toBe(true);
    expect(existsSync(join(dir, 'state', 'it.db'))).toBe(false);
  });

  it('OAuth with a 5-second token lifetime: completes by refreshing, and writes the new pair back to the token files', async () => {
    // Longer than one token lifetime by construction, not by measurement: 83 items (60 projects, 15
    // snippets, 8 groups), each move exactly 400 ms, at most 5 at once on the sandbox: at least 6.8 s.
    const { sandbox, dir, runCli } = await simSetup(
      'run-oauth',
      { moveDurationMs: 400, workers: 5 },
      { oauthTtlSeconds: 5, projects: 60 },
    );
    const plan = writePlan(dir, { oauth: true, concurrency: 5 });
    const r = await runCli(['run', plan], { cwd: dir, env: { SHARDMOVE_URL: sandbox.url } });
    expect(r.code, r.stderr).toBe(0);
    await expectAllOnCluster(sandbox.url);
    const access = readFileSync(join(dir, 'access.txt'), 'utf8').trim();
    const refresh = readFileSync(join(dir, 'refresh.txt'), 'utf8').trim();
    expect(access).not.toBe(OAUTH.accessToken);
    expect(refresh).not.toBe(OAUTH.refreshToken);
    const log = readFileSync(join(dir, 'state', 'it.log'), 'utf8');
    for (const secret of [access, refresh, OAUTH.accessToken, OAUTH.refreshToken, OAUTH.clientSecret])
      expect(log).not.toContain(secret);
    expect(log).toContain('oauth tokens refreshed');
  });

  it('status without a checkpoint says so and exits 1', async () => {
    const { dir, runCli } = await simSetup('status-none', {});
    const plan = writePlan(dir);
    const r = await runCli(['status', plan], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no checkpoint');
  });
});

describe('shardmove run (separate processes, real HTTP)', { timeout: 60_000 }, () => {
  // Eleven process starts in a row: generous on a loaded machine (about 13 s on an idle one).
  it(
    'kill -9 at nine named moments (pinned by a proxy) and SIGINT, then run again: completes; no double or pointless move',
    { timeout: 120_000 },
    async () => {
      // Moves of 100 ms: each moment is pinned by the proxy and the checkpoint's rows, not by a
      // move's length; what a move's length costs is the drains between the moments.
      const { sandbox, dir } = await setup('run-kill', ['--move-duration', '100', '--workers', '10'], {
        projects: 20,
        snippets: 5,
        groups: 3,
      });
      const proxy = await startHoldProxy(sandbox.url);
      onTestFinished(() => proxy.close());
      const plan = writePlan(dir, { concurrency: 4 });
      // A held request must outlast a `status` process start on a loaded machine before its timeout.
      writeFileSync(
        plan,
        `${readFileSync(plan, 'utf8').replace('timeout: 10s', 'timeout: 60s')}geo: { resync: true }\n`,
      );
      const env = sandboxEnv(proxy.url);
      const checkpoint = join(dir, 'state', 'it.db');
      // In-process (what `status` prints as JSON) to spare process starts; the CLI itself runs once while live.
      const status = () => readStatus(checkpoint, Date.now());
      /** Runs until the proxy holds a request matching `trap`, runs `whileHeld`, then kill -9; checks where it died. */
      const killAt = async (moment: string, trap: Trap, step: string, whileHeld?: (pid: number) => Promise<void>) => {
        let child: ChildProcess | undefined;
        let failure: unknown;
        const run = runCli(['run', plan], { cwd: dir, env, onStart: (c) => (child = c) });
        // A watchdog names the moment that never came, instead of a bare test timeout.
        const watchdog = setTimeout(() => {
          failure = new Error(`${moment}: no matching request within 50 s`);
          child?.kill('SIGKILL');
        }, 50_000);
        void proxy.arm(trap).then(async () => {
          try {
            await whileHeld?.(child!.pid!);
          } catch (err) {
            failure = err;
          } finally {
            child!.kill('SIGKILL');
          }
        });
        const r = await run;
        clearTimeout(watchdog);
        proxy.release();
        if (failure) throw failure;
        expect(r.code, `${moment}: the run ended on its own (${r.stderr}) instead of being killed`).toBeNull();
        expect(savedStep(checkpoint), moment).toBe(step);
      };
      const api = (method: string, re: RegExp) => (r: SeenRequest) => r.method === method && re.test(r.url);
      const MOVES = /^\/api\/v4\/(projects|snippets|groups)\/\d+\/repository_storage_moves/;
      const LISTING = /^\/api\/v4\/(projects|snippets\/all|groups)\?.*repository_storage=/;

      await killAt('pre-flight', { match: api('GET', /^\/api\/v4\/user\b/), forward: false }, 'preflight');
      await killAt('storage check', { match: api('GET', /^\/-\/readiness/), forward: false }, 'storages');
      // The weights reach the sandbox, the answer does not: the resume must still know the old ones.
      await killAt(
        'weights written, answer lost',
        { match: api('PUT', /^\/api\/v4\/application\/settings/), forward: true },
        'weights',
      );
      await killAt('first enumeration', { match: api('GET', LISTING), forward: false }, 'drain');
      // The POST creates a move the checkpoint never hears of: the item stays in `scheduling` and the
      // resume must find that move (reconcile) instead of sending a second one.
      await killAt(
        'scheduling: move created, id never recorded',
        { match: api('POST', MOVES), forward: true },
        'drain',
      );
      expect(itemStates(checkpoint).scheduling, 'an intent without a move id').toBeGreaterThan(0);
      // Polling proper (our moves in flight, nothing left to reconcile); status sees the live run.
      await killAt(
        'polling',
        {
          match: (r) => {
            if (r.method !== 'GET' || !/repository_storage_moves/.test(r.url)) return false;
            const states = itemStates(checkpoint);
            return states['scheduling'] === 0 && (states['in_flight'] ?? 0) > 0;
          },
          forward: false,
        },
        'drain',
        async (pid) => {
          const live = await runCli(['status', plan, '--json'], { cwd: dir });
          const report = JSON.parse(live.stdout) as ReturnType<typeof readStatus>;
          expect(report.state).toBe('running');
          expect(report.lock).toMatchObject({ pid, alive: true });
          expect(report.kinds.some((k) => k.inFlight > 0)).toBe(true);
          expect(renderStatus(report)).toContain(`running as pid ${pid}`);
        },
      );
      const killed = status();
      expect(killed.state).toBe('interrupted');
      expect(killed.lock).toMatchObject({ alive: false });

      // SIGINT into a resumed run once it schedules again: the step in flight returns, the checkpoint is saved.
      const seq = eventsOf(checkpoint).at(-1)?.seq ?? 0;
      const interrupted = await runCli(['run', plan], {
        cwd: dir,
        env,
        onStart: (child) =>
          void waitForEvent(checkpoint, 'move.scheduled', seq).then(
            () => child.kill('SIGINT'),
            () => child.kill('SIGKILL'),
          ),
      });
      expect(interrupted.code, interrupted.stderr).toBe(130);
      expect(interrupted.stderr).toMatch(/interrupted; to continue: shardmove run \S+plan\.yaml\n/);
      expect(
        eventsOf(checkpoint)
          .filter((e) => e.seq > seq)
          .map((e) => e.type),
      ).toContain('run.interrupted');
      expect(status()).toMatchObject({ state: 'interrupted', lock: null });

      await killAt(
        're-enumeration',
        { match: (r) => r.method === 'GET' && isReEnumeration(checkpoint, r.url), forward: false },
        'drain',
      );
      await killAt(
        'verify',
        {
          match: (r) => r.method === 'GET' && LISTING.test(r.url) && lastStep(checkpoint) === 'verify',
          forward: false,
        },
        'verify',
      );
      await killAt(
        'geo resync sent, answer lost',
        { match: api('POST', /^\/api\/v4\/geo\/node_proxy\/\d+\/graphql/), forward: true },
        'geo',
      );

      const last = await runCli(['run', plan], { cwd: dir, env });
      expect(last.code, last.stderr).toBe(0);
      expect(last.stdout).toContain('Weights before: default=100');
      expect(status()).toMatchObject({ state: 'done', lock: null });
      await expectAllOnCluster(sandbox.url);
      for (const kind of ['project', 'snippet', 'group'] as const) {
        expect(invariantViolations(await movesOf(sandbox.url, kind), 'cluster'), kind).toEqual([]);
      }
    },
  );
});
