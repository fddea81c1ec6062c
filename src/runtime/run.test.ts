import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CodedError } from '../../test/support/coded-error.js';
import { createFakeApi, testPlan } from '../../test/support/fake-runtime-deps.js';
import { reportOutcome } from '../cli/run.js';
import type { DrainInput, DrainOutput, VerifyOutput } from '../machine/types.js';
import type { Plan } from '../plan/types.js';
import { openCheckpoint } from '../store/checkpoint.js';
import type { Precheck } from './precheck/precheck.js';
import type { ActorStore } from '../store/types.js';
import { systemClock } from '../shared/clock.js';
import { executeRun } from './run.js';
import { realActors } from '../actors/index.js';
import type { RunOptions, RuntimeServices } from './types.js';

const TOKEN = 'glpat-runtime-test-secret-value-0042';

function sink() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  }) as Writable & { isTTY?: boolean };
  return { stream, text: () => chunks.join('') };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardmove-run-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

interface Harness {
  plan?: Plan;
  hash?: string;
  drain?: (i: DrainInput, signal: AbortSignal, store: ActorStore) => Promise<DrainOutput>;
  verify?: () => Promise<VerifyOutput>;
  pid?: number;
  alive?: boolean;
  signal?: AbortSignal;
  acceptPlanChange?: boolean;
  dryRun?: boolean;
  /** Called with the api options' onRefresh when the drain runs (simulates an OAuth refresh). */
  refresh?: (onRefresh: (t: { accessToken: string; refreshToken: string }) => void) => void;
  /** The verdict of the checkpoint's check in a worker thread (./precheck/precheck.ts). */
  precheck?: Precheck | null;
  /** Each openCheckpoint call's options, as the runtime passed them. */
  opens?: unknown[];
}

async function run(h: Harness = {}) {
  const out = sink();
  const err = sink();
  const api = createFakeApi();
  const drains: string[] = [];
  const plan =
    h.plan ??
    testPlan({
      instance: {
        url: 'http://x',
        credentials: { type: 'token', token: TOKEN },
        sudo: null,
        timeoutMs: 1000,
        outageWaitMs: 1_800_000,
      },
    });
  let onRefresh: ((t: { accessToken: string; refreshToken: string }) => void) | undefined;
  const services: RuntimeServices = {
    loadPlan: async () => ({ plan, hash: h.hash ?? 'hash-1', warnings: [], file: 'plan.yaml' }),
    openCheckpoint: (file, o) => {
      h.opens?.push(o);
      return openCheckpoint(file);
    },
    createApi: (_plan, o) => {
      onRefresh = o.onRefresh;
      return api;
    },
    actors: {
      ...realActors,
      drain: async (deps, i) => {
        drains.push(`${i.source}/${i.kind}`);
        if (h.refresh && onRefresh) h.refresh(onRefresh);
        // A careless actor: the logger must still keep the token out of the file.
        deps.log.info({ token: TOKEN, headers: { authorization: `Bearer ${TOKEN}` } }, `draining with ${TOKEN}`);
        return h.drain ? h.drain(i, deps.signal, deps.store) : { moved: 3, quarantined: 0, remaining: 0 };
      },
      verify: h.verify ?? (async () => ({ ok: true, perKindAndSource: {}, problems: [] })),
    },
    clock: systemClock,
    isAlive: () => h.alive ?? false,
    pid: h.pid ?? 1111,
    host: 'test-host',
  };
  const opts: RunOptions = {
    planFile: join(dir, 'plan.yaml'),
    statePath: join(dir, 'run.db'),
    dryRun: h.dryRun ?? false,
    acceptPlanChange: h.acceptPlanChange ?? false,
    env: {},
    cwd: dir,
    signal: h.signal ?? new AbortController().signal,
    stdout: out.stream,
    stderr: err.stream,
    ...(h.precheck !== undefined ? { precheck: Promise.resolve(h.precheck) } : {}),
  };
  // The CLI's mapping of the outcome: these tests check the exit code and the printed report.
  const code = reportOutcome(await executeRun(opts, services), { stdout: out.stream, stderr: err.stream });
  return { code, stdout: out.text(), stderr: err.text(), api, drains };
}

function savedSnapshot() {
  const store = openCheckpoint(join(dir, 'run.db'));
  try {
    return { run: store.loadRun(), events: store.readEvents() };
  } finally {
    store.close();
  }
}

describe('executeRun', () => {
  it('runs a fresh plan to done (exit 0), checkpointing the final snapshot and the step events', async () => {
    const r = await run();
    expect(r.code).toBe(0);
    expect(r.drains).toHaveLength(6);
    expect(r.stdout).toContain('DONE: every repository moved and verified');
    expect(r.stdout).toContain('Weights before: default=100');
    const { run: saved, events } = savedSnapshot();
    expect(saved?.machineVersion).toBe(1);
    expect((saved?.snapshot as { value: string }).value).toBe('done');
    const steps = events.filter((e) => e.type === 'step.started').map((e) => e.data.step);
    expect(steps).toEqual([
      'preflight',
      'storages',
      'weights',
      'drain nfs-1/projects',
      'drain nfs-1/snippets',
      'drain nfs-1/groups',
      'drain nfs-2/projects',
      'drain nfs-2/snippets',
      'drain nfs-2/groups',
      'verify',
      'done',
    ]);
    expect(r.api.state.weights.cluster).toBe(100);
  });

  it('with the one schedule, one drain step covers every source and kind', async () => {
    const plan = testPlan({
      instance: {
        url: 'http://x',
        credentials: { type: 'token', token: TOKEN },
        sudo: null,
        timeoutMs: 1000,
        outageWaitMs: 1_800_000,
      },
    });
    const r = await run({
      plan: { ...plan, move: { ...plan.move, order: 'together' } },
      drain: async (i) => ({
        moved: 6,
        quarantined: 0,
        remaining: 0,
        perPair: (i.pairs ?? []).map((p) => ({
          source: p.source,
          kind: p.kind,
          moved: 1,
          quarantined: 0,
          remaining: 0,
        })),
      }),
    });
    expect(r.code).toBe(0);
    expect(r.drains).toEqual(['nfs-1/projects']);
    const { events } = savedSnapshot();
    const steps = events.filter((e) => e.type === 'step.started').map((e) => e.data.step);
    expect(steps).toContain('drain nfs-1,nfs-2/projects,snippets,groups');
    expect(r.stdout).toContain('DONE: every repository moved and verified');
  });

  it('exits 3 when items ended quarantined', async () => {
    const r = await run({ drain: async (i) => ({ moved: 1, quarantined: i.kind === 'groups' ? 1 : 0, remaining: 0 }) });
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('DONE WITH QUARANTINED ITEMS');
  });

  it('exits 1 with the step and the cause, and a later run resumes from pre-flight', async () => {
    const r = await run({
      verify: async () => {
        throw new CodedError('SHARDMOVE_API_BAD_RESPONSE', 'listing returned garbage');
      },
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /FAILED\n {2}step: verify\n {2}cause: listing returned garbage \(SHARDMOVE_API_BAD_RESPONSE\)/,
    );
    const again = await run();
    expect(again.code).toBe(0);
    expect(savedSnapshot().events.some((e) => e.type === 'run.restart')).toBe(true);
    // The previous weights survive the restart: the instance's weights had been changed already.
    expect(again.stdout).toContain('Weights before: default=100');
  });

  it('on abort, lets the drain return, saves the checkpoint, exits 130; the next run re-invokes that drain', async () => {
    const ctl = new AbortController();
    const first = await run({
      signal: ctl.signal,
      drain: async (i, signal) => {
        if (i.source === 'nfs-2' && i.kind === 'snippets') {
          ctl.abort(new Error('SIGINT'));
          await new Promise((r) => setTimeout(r, 20));
          expect(signal.aborted).toBe(true);
          return { moved: 0, quarantined: 0, remaining: 5 };
        }
        return { moved: 1, quarantined: 0, remaining: 0 };
      },
    });
    expect(first.code).toBe(130);
    expect(first.stderr).toContain('interrupted; run again to continue');
    const saved = savedSnapshot();
    const snap = saved.run?.snapshot as { value: unknown; context: { sourceIndex: number; kindIndex: number } };
    expect(snap.value).toBe('drain');
    expect([snap.context.sourceIndex, snap.context.kindIndex]).toEqual([1, 1]);
    expect(saved.events.map((e) => e.type)).toContain('run.interrupted');

    const second = await run();
    expect(second.code).toBe(0);
    expect(second.drains).toEqual(['nfs-2/snippets', 'nfs-2/groups']);
    expect(second.api.state.calls).not.toContain('currentUser');
  });

  it('aborted before it starts: touches nothing, saves a pre-flight checkpoint, exits 130', async () => {
    const ctl = new AbortController();
    ctl.abort(new Error('SIGTERM'));
    const r = await run({ signal: ctl.signal });
    expect(r.code).toBe(130);
    expect(r.api.state.calls).toEqual(['close']);
    expect((savedSnapshot().run?.snapshot as { value: string }).value).toBe('preflight');
    const again = await run();
    expect(again.code).toBe(0);
  });

  it('refuses a changed plan (PLAN_CHANGED) and resumes from pre-flight with --accept-plan-change', async () => {
    const ctl = new AbortController();
    await run({
      signal: ctl.signal,
      drain: async () => {
        ctl.abort();
        return { moved: 0, quarantined: 0, remaining: 0 };
      },
    });
    await expect(run({ hash: 'hash-2' })).rejects.toMatchObject({
      code: 'SHARDMOVE_PLAN_CHANGED',
      message: expect.stringContaining('--accept-plan-change'),
    });
    const accepted = await run({ hash: 'hash-2', acceptPlanChange: true });
    expect(accepted.code).toBe(0);
    expect(accepted.api.state.calls).toContain('currentUser');
    expect(accepted.drains).toHaveLength(6);
    expect(savedSnapshot().run?.planHash).toBe('hash-2');
  });

  it('refuses while another live process holds the lock, and takes over a stale one', async () => {
    const holder = openCheckpoint(join(dir, 'run.db'));
    holder.acquireLock({ pid: 2222, host: 'test-host', startedAt: 1 }, () => false);
    holder.close = () => undefined;
    await expect(run({ alive: true })).rejects.toMatchObject({
      code: 'SHARDMOVE_LOCKED',
      message: expect.stringContaining('pid 2222'),
    });
    const r = await run({ alive: false });
    expect(r.code).toBe(0);
    expect(savedSnapshot().events.map((e) => e.type)).toContain('lock.taken_over');
  });

  it('never writes the token into the log file or the checkpoint', async () => {
    const r = await run();
    expect(r.code).toBe(0);
    const files = readdirSync(dir);
    expect(files).toContain('run.log');
    const log = readFileSync(join(dir, 'run.log'), 'utf8');
    expect(log).toContain('draining with [REDACTED]');
    expect(log).toContain('"token":"[REDACTED]"');
    for (const f of files) expect(readFileSync(join(dir, f)).includes(TOKEN), f).toBe(false);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });

  it('dry run: no write reaches the api, verify is skipped, the report says nothing changed', async () => {
    // The dry run's report counts what its drains listed into the checkpoint: seven projects on nfs-1.
    const drain = async (i: DrainInput, _signal: AbortSignal, store: ActorStore) => {
      if (i.kind !== 'projects' || i.source !== 'nfs-1') return { moved: 0, quarantined: 0, remaining: 0 };
      store.startRound('projects', 'nfs-1', 1);
      const listed = [1, 2, 3, 4, 5, 6, 7].map((id) => ({
        kind: 'projects' as const,
        id,
        storage: 'nfs-1',
        name: `p${id}`,
        sizeBytes: 1024,
      }));
      store.recordPage('projects', 'nfs-1', 1, listed, 0);
      return { moved: 0, quarantined: 0, remaining: 7 };
    };
    const r = await run({ dryRun: true, drain });
    expect(r.code).toBe(0);
    expect(r.api.state.mutating).toBe(0);
    expect(r.stdout).toContain('nothing was changed');
    expect(r.stdout).toContain('projects on nfs-1: 7');
    expect(r.stdout).toContain('weights after: default=0, cluster=100');
  });

  it('a finished run run again reports the same result without doing anything', async () => {
    expect((await run()).code).toBe(0);
    const again = await run();
    expect(again.code).toBe(0);
    expect(again.drains).toEqual([]);
    expect(again.api.state.calls).toEqual(['close']);
  });

  it('OAuth from files: a refreshed pair is written back atomically (0600) and redacted from the log', async () => {
    writeFileSync(join(dir, 'access'), 'oauth-access-old-000000000001\n');
    writeFileSync(join(dir, 'refresh'), 'oauth-refresh-old-00000000001\n');
    writeFileSync(
      join(dir, 'plan.yaml'),
      'instance:\n  oauth:\n    access_token_file: access\n    refresh_token_file: refresh\n',
    );
    const plan = testPlan();
    plan.instance.credentials = {
      type: 'oauth',
      accessToken: 'oauth-access-old-000000000001',
      refreshToken: 'oauth-refresh-old-00000000001',
      clientId: 'app',
      clientSecret: 'oauth-client-secret-0000001',
      redirectUri: 'http://localhost/cb',
    };
    const r = await run({
      plan,
      refresh: (cb) =>
        cb({ accessToken: 'oauth-access-new-000000000002', refreshToken: 'oauth-refresh-new-00000000002' }),
      drain: async () => ({ moved: 1, quarantined: 0, remaining: 0 }),
    });
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, 'access'), 'utf8').trim()).toBe('oauth-access-new-000000000002');
    expect(readFileSync(join(dir, 'refresh'), 'utf8').trim()).toBe('oauth-refresh-new-00000000002');
    expect(statSync(join(dir, 'refresh')).mode & 0o777).toBe(0o600);
    expect(r.stdout).not.toContain('kept in memory only');
    const log = readFileSync(join(dir, 'run.log'), 'utf8');
    for (const secret of [
      'oauth-access-new-000000000002',
      'oauth-refresh-new-00000000002',
      'oauth-client-secret-0000001',
    ])
      expect(log).not.toContain(secret);
  });

  it('OAuth from the environment: warns that a crash will need fresh tokens', async () => {
    const plan = testPlan();
    plan.instance.credentials = {
      type: 'oauth',
      accessToken: 'oauth-access-env-000000000001',
      refreshToken: 'oauth-refresh-env-00000000001',
      clientId: 'app',
      clientSecret: 'oauth-client-secret-0000001',
      redirectUri: 'http://localhost/cb',
    };
    const r = await run({ plan });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('kept in memory only');
  });
});

describe("the checkpoint's check done in a worker thread", () => {
  it('opens the file it checked without checking it again, and any other file as before', async () => {
    const opens: unknown[] = [];
    const file = join(dir, 'run.db');
    expect((await run({ opens, precheck: { file, checked: true } })).code).toBe(0);
    expect(opens[0]).toEqual({ checked: true });
    opens.length = 0;
    expect((await run({ opens, precheck: { file: join(dir, 'other.db'), checked: true } })).code).toBe(0);
    expect(opens[0]).toBeUndefined();
  });

  it('refuses a file the worker found damaged, before opening it', async () => {
    const opens: unknown[] = [];
    const file = join(dir, 'run.db');
    const message = `${file} is not a usable shardmove checkpoint: SQLite's quick_check finds it damaged (x)`;
    await expect(run({ opens, precheck: { file, checked: true, problem: 'damaged', message } })).rejects.toMatchObject({
      code: 'SHARDMOVE_CHECKPOINT_UNUSABLE',
      problem: 'damaged',
      message,
    });
    expect(opens).toEqual([]);
  });
});
