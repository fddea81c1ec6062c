/**
 * The torture itself, shared by `npm run torture` (full configuration) and test/torture.test.ts
 * (small configuration): a faulty sandbox with `--db`, a plan with a short `poll.stuck_after`, and
 * `shardmove run` killed with SIGKILL at random moments and restarted, the sandbox killed and
 * restarted a few times mid-run, commits written all along; then one last run to the end and the
 * verdict from the sandbox's own records (./torture-check.ts). Everything random is seeded.
 * It lives in test/support so that the test suite depends on no benchmark code; bench/torture.ts
 * imports it from here.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { createRandom } from '../../src/sandbox/random.js';
import type { CommitLedger, Kind } from './torture-commits.js';
import { startCommitInjector } from './torture-commits.js';
import type { Verdict } from './torture-check.js';
import { judge, readCommitCounts, readItems } from './torture-check.js';
import type { RunResult, SandboxProc } from './torture-procs.js';
import { ROOT, restartSandboxOn, startRun, startSandboxProc } from './torture-procs.js';

export interface TortureConfig {
  seed: number;
  /** SIGKILLs of the orchestrator before the last, undisturbed run. */
  kills: number;
  /** Sandbox stops (alternately SIGKILL and SIGTERM) and restarts, spread over the kills. */
  sandboxRestarts: number;
  projects: number;
  snippets: number;
  groups: number;
  workers: number;
  moveDurationMs: number;
  latencyMs: number;
  /** Requests per minute before 429. */
  rateLimit: number;
  errorRate: number;
  resetRate: number;
  moveFailRate: number;
  stuckRate: number;
  /** How many items (spread over kinds) always fail their moves. */
  brokenItems: number;
  concurrency: number;
  /** poll.stuck_after in the plan, e.g. `4s`. */
  stuckAfter: string;
  /** Share of kills aimed at start-up and pre-flight: after a delay drawn from killDelayMs (ms) from the spawn. */
  earlyKillShare: number;
  killDelayMs: [number, number];
  /** The other kills come within this many ms after the run recorded `run.started` in its checkpoint. */
  killAfterStartMs: number;
  commitIntervalMs: number;
  /** Limit for the last run. */
  finalRunTimeoutMs: number;
  /** Working directory (default: a new temporary one). */
  dir?: string;
}

export const FULL: TortureConfig = {
  seed: 20261122,
  kills: 55,
  sandboxRestarts: 4,
  projects: 700,
  snippets: 70,
  groups: 35,
  workers: 6,
  moveDurationMs: 600,
  latencyMs: 5,
  rateLimit: 800,
  errorRate: 0.05,
  resetRate: 0.02,
  moveFailRate: 0.2,
  stuckRate: 0.01,
  brokenItems: 4,
  concurrency: 8,
  stuckAfter: '8s',
  earlyKillShare: 0.15,
  killDelayMs: [300, 2500],
  killAfterStartMs: 3000,
  commitIntervalMs: 150,
  finalRunTimeoutMs: 600_000,
};

export const SMALL: TortureConfig = {
  seed: 7,
  kills: 8,
  sandboxRestarts: 1,
  projects: 36,
  snippets: 8,
  groups: 6,
  workers: 6,
  moveDurationMs: 200,
  latencyMs: 2,
  rateLimit: 6000,
  errorRate: 0.05,
  resetRate: 0.02,
  moveFailRate: 0.2,
  stuckRate: 0.04,
  brokenItems: 2,
  concurrency: 6,
  stuckAfter: '3s',
  earlyKillShare: 0.15,
  killDelayMs: [200, 1500],
  killAfterStartMs: 1000,
  commitIntervalMs: 100,
  finalRunTimeoutMs: 40_000,
};

export interface TortureResult {
  config: TortureConfig;
  dir: string;
  orchestratorKills: number;
  /** Of those, kills aimed at start-up and pre-flight (the others came after `run.started`). */
  earlyKills: number;
  /** Runs that ended on their own before their kill (exit code -> count). */
  earlyExits: Record<string, number>;
  sandboxKills: { SIGKILL: number; SIGTERM: number };
  /** Request faults as the sandbox counted them (last logged counters of each incarnation). */
  requestFaults: Record<string, number>;
  verdict: Verdict;
  commits: Omit<CommitLedger, 'accepted' | 'ambiguous'> & { accepted: number; ambiguous: number };
  finalRun: { code: number | null; attempts: number; verified: boolean; stdoutTail: string };
  /** Whether the migration finished before every kill was spent (the workload was too small). */
  finishedEarly: boolean;
  wallMs: number;
  /** Every broken invariant, empty when the torture passed. */
  failures: string[];
}

const TOKEN = 'glpat-sandbox-root-api-sudo-0001';
const DESTINATION = 'cluster';

/** The built-in seed with `c`'s counts of projects, snippets and group wikis, written into `dir`. */
export function writeSeed(dir: string, c: Pick<TortureConfig, 'projects' | 'snippets' | 'groups'>): string {
  let text = readFileSync(join(ROOT, 'plans', 'sandbox.yaml'), 'utf8');
  for (const [key, value] of [
    ['projects', c.projects],
    ['snippets', c.snippets],
    ['groups', c.groups],
  ] as const) {
    const re = new RegExp(`^(\\s*${key}:\\s*)\\d+`, 'm');
    if (!re.test(text)) throw new Error(`the built-in seed has no ${key}`);
    text = text.replace(re, `$1${value}`);
  }
  const file = join(dir, 'seed.yaml');
  writeFileSync(file, text);
  return file;
}

/** The plan: URL and token from the environment, so a sandbox on another port needs no plan change. */
function writePlan(dir: string, c: TortureConfig): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: torture',
      'instance:',
      '  url: ${TORTURE_URL}',
      '  token: ${TORTURE_TOKEN}',
      '  timeout: 5s',
      'move:',
      '  from: [nfs-1, nfs-2, default]',
      `  to: ${DESTINATION}`,
      '  kinds: [projects, snippets, groups]',
      '  mode: throttled',
      `  concurrency: ${c.concurrency}`,
      `weights: { ${DESTINATION}: 100, nfs-1: 0, nfs-2: 0, default: 0 }`,
      `poll: { interval: 200ms, stuck_after: ${c.stuckAfter} }`,
      'retry: { max_attempts: 3, backoff: 300ms }',
      'verify: true',
      '',
    ].join('\n'),
  );
  return file;
}

function pickBroken(c: TortureConfig, rand: () => number): string[] {
  const out = new Set<string>();
  const sizes: [Kind, number][] = [
    ['project', c.projects],
    ['snippet', c.snippets],
    ['group', c.groups],
  ];
  for (let i = 0; out.size < c.brokenItems && i < 1000; i++) {
    const [kind, n] = sizes[i % 3] as [Kind, number];
    if (n > 0) out.add(`${kind}:${1 + Math.floor(rand() * n)}`);
  }
  return [...out];
}

/** The sequence number of the last `run.started` event (0 before there is one). */
function runStarts(checkpoint: string): number {
  try {
    const db = new Database(checkpoint, { readonly: true, fileMustExist: true });
    try {
      return (
        db.prepare("SELECT coalesce(max(seq), 0) AS n FROM events WHERE type = 'run.started'").get() as { n: number }
      ).n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/** Items the checkpoint counts as moved (0 before it exists): how far the kill phase got. */
function movedSoFar(checkpoint: string): number {
  try {
    const db = new Database(checkpoint, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare("SELECT count(*) AS n FROM items WHERE state = 'moved'").get() as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

/** Runs the torture; `log` gets one line per notable step. */
export async function runTorture(c: TortureConfig, log: (line: string) => void = () => {}): Promise<TortureResult> {
  const t0 = performance.now();
  const rand = createRandom(c.seed);
  const dir = c.dir ?? mkdtempSync(join(tmpdir(), 'shardmove-torture-'));
  const sandboxDb = join(dir, 'sandbox.db');
  const checkpoint = join(dir, 'torture.db');
  const plan = writePlan(dir, c);
  const broken = pickBroken(c, rand);
  const sandboxArgs = [
    '--db',
    sandboxDb,
    '--seed',
    writeSeed(dir, c),
    '--workers',
    String(c.workers),
    '--move-duration',
    String(c.moveDurationMs),
    '--latency',
    String(c.latencyMs),
    '--rate-limit',
    String(c.rateLimit),
    '--error-rate',
    String(c.errorRate),
    '--reset-rate',
    String(c.resetRate),
    '--move-fail-rate',
    String(c.moveFailRate),
    '--stuck-rate',
    String(c.stuckRate),
    '--fault-seed',
    String(c.seed % 2 ** 31),
    ...(broken.length > 0 ? ['--broken-items', broken.join(',')] : []),
  ];
  const requestFaults: Record<string, number> = {};
  let sandbox: SandboxProc = await startSandboxProc(sandboxArgs, 0, process.env);
  const port = sandbox.port;
  log(`sandbox on ${sandbox.url}, db ${sandboxDb}, broken ${broken.join(',') || 'none'}`);

  const initialCommits = readCommitCounts(sandboxDb);
  const all = readItems(sandboxDb);
  const targets = Array.from(
    { length: Math.min(30, all.length) },
    () => all[Math.floor(rand() * all.length)] as { kind: Kind; id: number },
  );
  const injector = startCommitInjector({
    url: () => sandbox.url,
    token: TOKEN,
    targets,
    random: createRandom(c.seed ^ 0xc0ffee),
    intervalMs: c.commitIntervalMs,
    prefix: `torture-${c.seed}`,
  });
  const env = { ...process.env, TORTURE_URL: sandbox.url, TORTURE_TOKEN: TOKEN };

  const restartAt = new Set(
    Array.from({ length: c.sandboxRestarts }, (_, j) => Math.floor(((j + 1) * c.kills) / (c.sandboxRestarts + 1))),
  );
  const sandboxKills = { SIGKILL: 0, SIGTERM: 0 };
  const earlyExits: Record<string, number> = {};
  let kills = 0;
  let earlyKills = 0;
  let lastStart = 0;
  let finishedEarly = false;

  /** Stops the sandbox with `signal` and brings it back on the same port (the plan's URL is in its hash). */
  const bounceSandbox = async (signal: NodeJS.Signals) => {
    await sandbox.stop(signal);
    addCounts(requestFaults, sandbox.counts());
    sandboxKills[signal as 'SIGKILL' | 'SIGTERM']++;
    await sleep(300 + rand() * 1200);
    sandbox = await restartSandboxOn(sandboxArgs, port, process.env);
    log(`sandbox ${signal === 'SIGKILL' ? 'killed' : 'terminated'} and restarted on ${sandbox.url}`);
  };

  try {
    // Cycles whose run ended by itself (exit 1 while the sandbox was down) do not count as kills.
    for (let i = 0; kills < c.kills && i < c.kills * 2; i++) {
      const run = startRun(plan, checkpoint, dir, env);
      let ended: RunResult | null = null;
      const race = async (ms: number) => {
        ended = await Promise.race([run.done, sleep(ms, null, { ref: false })]);
      };
      // Most kills land after the run has taken its checkpoint (loading the code takes a second or
      // two and a kill there proves little); a share hits start-up and pre-flight on purpose.
      let delay: number;
      // The very first run always dies young: a kill before the checkpoint even has a snapshot.
      const early = i === 0 || rand() < c.earlyKillShare;
      if (early) delay = c.killDelayMs[0] + rand() * (c.killDelayMs[1] - c.killDelayMs[0]);
      else {
        const seen = lastStart;
        for (let waited = 0; waited < 30_000 && !ended; waited += 50) {
          lastStart = runStarts(checkpoint);
          if (lastStart > seen) break;
          await race(50);
        }
        delay = rand() * c.killAfterStartMs;
      }
      if (ended) {
        // ended while starting: handled below
      } else if (restartAt.has(i)) {
        await race(delay / 2);
        if (!ended) await bounceSandbox(sandboxKills.SIGKILL <= sandboxKills.SIGTERM ? 'SIGKILL' : 'SIGTERM');
        if (!ended) await race(delay / 2);
      } else await race(delay);
      if (ended) {
        const r = ended as RunResult;
        const code = String(r.code);
        earlyExits[code] = (earlyExits[code] ?? 0) + 1;
        if (r.code === 0 || r.code === 3) {
          finishedEarly = true;
          log(`run ${i + 1} finished by itself (exit ${r.code}) after ${kills} kills`);
          break;
        }
        log(`run ${i + 1} exited ${r.code} by itself: ${r.stderr.trim().split('\n').slice(-2).join(' | ')}`);
        continue;
      }
      run.kill('SIGKILL');
      await run.done;
      lastStart = runStarts(checkpoint);
      kills++;
      if (early) earlyKills++;
      if (kills % 10 === 0) log(`${kills} kills`);
    }

    log(
      `kill phase over: ${kills} kills (${earlyKills} aimed at start-up), ${movedSoFar(checkpoint)} items moved so far`,
    );
    let finalRun: TortureResult['finalRun'] = { code: null, attempts: 0, verified: false, stdoutTail: '' };
    for (let attempt = 1; attempt <= 3; attempt++) {
      const run = startRun(plan, checkpoint, dir, env);
      const r = await Promise.race([run.done, sleep(c.finalRunTimeoutMs, null, { ref: false })]);
      if (!r) {
        run.kill('SIGKILL');
        await run.done;
        finalRun = { code: null, attempts: attempt, verified: false, stdoutTail: 'timed out' };
        break;
      }
      finalRun = {
        code: r.code,
        attempts: attempt,
        verified: /Verification: passed/.test(r.stdout),
        stdoutTail: r.stdout.trim().split('\n').slice(-25).join('\n'),
      };
      log(`final run ${attempt}: exit ${r.code}`);
      if (r.code === 0 || r.code === 3) break;
    }

    const ledger = await injector.stop();
    await sandbox.stop('SIGTERM');
    addCounts(requestFaults, sandbox.counts());
    const verdict = judge({ sandboxDb, checkpoint, destination: DESTINATION, initialCommits, ledger });

    const failures: string[] = [];
    if (finishedEarly)
      failures.push(`the migration finished after only ${kills} of ${c.kills} kills: make the workload larger`);
    if (finalRun.code !== 0 && finalRun.code !== 3)
      failures.push(`final run exited ${finalRun.code} (expected 0 or 3)`);
    if (!finalRun.verified) failures.push('final run did not report "Verification: passed"');
    if (finalRun.code === 0 && verdict.quarantined.length > 0) failures.push('exit 0 with quarantined items');
    failures.push(
      ...verdict.lost.map((s) => `lost: ${s}`),
      ...verdict.duplicates.map((s) => `duplicate: ${s}`),
      ...verdict.movesOnDestination.map((s) => `on destination: ${s}`),
      ...verdict.commitsLost.map((s) => `commit: ${s}`),
    );
    return {
      config: c,
      dir,
      orchestratorKills: kills,
      earlyKills,
      earlyExits,
      sandboxKills,
      requestFaults,
      verdict,
      commits: {
        accepted: ledger.accepted.length,
        ambiguous: ledger.ambiguous.length,
        refusedReadOnly: ledger.refusedReadOnly,
        notApplied: ledger.notApplied,
      },
      finalRun,
      finishedEarly,
      wallMs: performance.now() - t0,
      failures,
    };
  } finally {
    await injector.stop().catch(() => undefined);
    await sandbox.stop('SIGTERM');
  }
}
