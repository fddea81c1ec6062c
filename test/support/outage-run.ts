/**
 * A real instance outage in the middle of a drain, as an operator meets one: the sandbox process
 * (on its own SQLite file) is killed and started again on the same port after `downMs` (a Puma
 * restart, a failover: connections refused), or stopped with SIGSTOP and continued with SIGCONT
 * (a hung host: connections accepted, never answered, so every request runs into the plan's
 * `instance.timeout`). The orchestrator is a separate `shardmove run` process with its default
 * outage settings unless `retryMs` is given. Nothing is faked: the verdict comes from the sandbox's
 * own records (./torture-check.ts) and the run's checkpoint.
 *
 * Used by `npm run outage` (bench/outage.ts, real minutes) and by test/cli-outage-freeze.test.ts
 * (seconds).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { Verdict } from './torture-check.js';
import { judge, readCommitCounts } from './torture-check.js';
import type { RunResult } from './torture-procs.js';
import { restartSandboxOn, startRun, startSandboxProc } from './torture-procs.js';
import { writeSeed } from './torture-run.js';

const TOKEN = 'glpat-sandbox-root-api-sudo-0001';
const DESTINATION = 'cluster';
const TERMINAL = new Set(['finished', 'failed', 'cleanup failed']);

export interface OutageConfig {
  /** `kill`: SIGKILL, then a new process on the same port and file; `freeze`: SIGSTOP, then SIGCONT. */
  mode: 'kill' | 'freeze';
  /** How long the instance stays away (with `upOnceHeldMs`: at most). */
  downMs: number;
  /**
   * When given, the instance comes back this long after the checkpoint records the hold
   * (`instance.unreachable`) instead of at `downMs`: the outage lasts as long as it must to be
   * held, and no longer.
   */
  upOnceHeldMs?: number;
  projects: number;
  snippets: number;
  groups: number;
  concurrency: number;
  workers: number;
  moveDurationMs: number;
  /** The plan's `instance.timeout`, e.g. `10s`. */
  timeout: string;
  /** The plan's `instance.outage_wait`, e.g. `30m`. */
  outageWait: string;
  /** SHARDMOVE_OUTAGE_RETRY_MS for the run; absent: the shipped 10 s. */
  retryMs?: number;
  /** How long the run may take after the outage ended before it counts as hung. */
  afterMs: number;
  /**
   * Whether the run must have said it was held: a frozen instance shorter than the request timeout
   * and its retries is only a slow answer, and holding for it would be wrong.
   */
  expectHold: boolean;
}

export interface OutageResult {
  config: OutageConfig;
  dir: string;
  /** Moves the sandbox had not ended when it went away. */
  inFlightAtOutage: number;
  run: RunResult;
  /** The run's stderr lines that speak of the hold. */
  heldLines: string[];
  /** The checkpoint's `instance.unreachable` and `instance.answered` events. */
  unreachable: number;
  answered: { downMs: number }[];
  verdict: Verdict;
  failures: string[];
}

/** The sandbox's project moves, through its API (the file is the live process's). */
async function projectMoves(url: string): Promise<{ state: string }[]> {
  const out: { state: string }[] = [];
  for (let page = 1; ; page++) {
    const res = await fetch(`${url}/api/v4/project_repository_storage_moves?per_page=100&page=${page}`, {
      headers: { 'PRIVATE-TOKEN': TOKEN },
    });
    if (!res.ok) throw new Error(`moves: HTTP ${res.status}`);
    const body = (await res.json()) as { state: string }[];
    out.push(...body);
    if (body.length < 100) return out;
  }
}

function writePlan(dir: string, c: OutageConfig): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: outage',
      'instance:',
      '  url: ${OUTAGE_URL}',
      '  token: ${OUTAGE_TOKEN}',
      `  timeout: ${c.timeout}`,
      `  outage_wait: ${c.outageWait}`,
      'move:',
      '  from: [nfs-1, nfs-2, default]',
      `  to: ${DESTINATION}`,
      '  kinds: [projects, snippets, groups]',
      '  mode: throttled',
      `  concurrency: ${c.concurrency}`,
      `weights: { ${DESTINATION}: 100, nfs-1: 0, nfs-2: 0, default: 0 }`,
      'poll: { interval: 200ms }',
      'retry: { max_attempts: 3, backoff: 300ms }',
      'verify: true',
      '',
    ].join('\n'),
  );
  return file;
}

/** Resolves `upOnceHeldMs` after the checkpoint has an `instance.unreachable` event (until `stop` aborts it). */
async function heldThen(checkpoint: string, upOnceHeldMs: number, stop: AbortSignal): Promise<void> {
  for (;;) {
    let held = false;
    try {
      held = eventsOf(checkpoint, 'instance.unreachable').length > 0;
    } catch {
      // not created yet, or busy for a moment
    }
    if (held) break;
    await sleep(100, undefined, { signal: stop });
  }
  await sleep(upOnceHeldMs, undefined, { signal: stop });
}

function eventsOf(checkpoint: string, type: string): string[] {
  const db = new Database(checkpoint, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT data FROM events WHERE type = ? ORDER BY seq').all(type) as { data: string }[]).map(
      (r) => r.data,
    );
  } finally {
    db.close();
  }
}

export async function runOutage(c: OutageConfig, log: (line: string) => void = () => {}): Promise<OutageResult> {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-outage-'));
  const sandboxDb = join(dir, 'sandbox.db');
  const checkpoint = join(dir, 'outage.db');
  const args = [
    '--db',
    sandboxDb,
    '--seed',
    writeSeed(dir, c),
    '--workers',
    String(c.workers),
    '--move-duration',
    String(c.moveDurationMs),
  ];
  let sandbox = await startSandboxProc(args, 0, process.env);
  const port = sandbox.port;
  const initialCommits = readCommitCounts(sandboxDb);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    OUTAGE_URL: sandbox.url,
    OUTAGE_TOKEN: TOKEN,
    ...(c.retryMs === undefined ? {} : { SHARDMOVE_OUTAGE_RETRY_MS: String(c.retryMs) }),
  };
  const run = startRun(writePlan(dir, c), checkpoint, dir, env);
  let frozen = false;
  try {
    // Moves in flight: as many as the sandbox's workers run, so the outage cuts real work off.
    let inFlight = 0;
    for (let waited = 0; waited < 60_000; waited += 100) {
      inFlight = (await projectMoves(sandbox.url)).filter((m) => !TERMINAL.has(m.state)).length;
      if (inFlight >= Math.min(c.workers, c.concurrency)) break;
      await sleep(100);
    }
    log(`${inFlight} moves in flight: the instance goes away (${c.mode}) for ${c.downMs / 1000} s`);
    if (c.mode === 'kill') await sandbox.stop('SIGKILL');
    else {
      process.kill(sandbox.pid, 'SIGSTOP');
      frozen = true;
    }
    const stopWaiting = new AbortController();
    const ended = await Promise.race([
      run.done,
      // (Aborted once the race is decided: the loser's rejection is that abort, and is dropped.)
      sleep(c.downMs, null, { signal: stopWaiting.signal }).catch(() => null),
      ...(c.upOnceHeldMs === undefined
        ? []
        : [
            heldThen(checkpoint, c.upOnceHeldMs, stopWaiting.signal).then(
              () => null,
              () => null,
            ),
          ]),
    ]).finally(() => stopWaiting.abort());
    if (ended) log(`the run ended while the instance was away: exit ${ended.code}`);
    if (c.mode === 'kill') sandbox = await restartSandboxOn(args, port, process.env);
    else {
      process.kill(sandbox.pid, 'SIGCONT');
      frozen = false;
    }
    log('the instance is back');
    const result = await Promise.race([run.done, sleep(c.afterMs, null)]);
    if (!result) {
      run.kill('SIGKILL');
      await run.done;
    }
    const r = await run.done;
    await sandbox.stop('SIGTERM');
    const verdict = judge({
      sandboxDb,
      checkpoint,
      destination: DESTINATION,
      initialCommits,
      ledger: { accepted: [], ambiguous: [], refusedReadOnly: 0, notApplied: 0 },
    });
    const heldLines = r.stderr.split('\n').filter((l) => /HELD: the instance|answers again/.test(l));
    const answered = eventsOf(checkpoint, 'instance.answered').map((d) => JSON.parse(d) as { downMs: number });
    const unreachable = eventsOf(checkpoint, 'instance.unreachable').length;
    const failures: string[] = [];
    if (!result) failures.push(`the run had not ended ${c.afterMs / 1000} s after the instance came back`);
    else if (r.code !== 0) failures.push(`the run exited ${r.code}, not 0`);
    const held = heldLines.some((l) => l.includes('HELD: the instance has not answered since'));
    if (c.expectHold && !held) failures.push('the run never said it was HELD by the outage');
    if (c.expectHold && answered.length === 0) failures.push('no instance.answered event: the hold never ended');
    if (answered.length !== unreachable)
      failures.push(`${unreachable} instance.unreachable but ${answered.length} instance.answered`);
    if (!/Verification: passed/.test(r.stdout)) failures.push('no "Verification: passed"');
    failures.push(
      ...verdict.lost.map((s) => `lost: ${s}`),
      ...verdict.duplicates.map((s) => `moved twice: ${s}`),
      ...verdict.movesOnDestination.map((s) => `moved from the destination: ${s}`),
    );
    if (verdict.quarantined.length > 0) failures.push(`${verdict.quarantined.length} quarantined`);
    return { config: c, dir, inFlightAtOutage: inFlight, run: r, heldLines, unreachable, answered, verdict, failures };
  } finally {
    if (frozen) process.kill(sandbox.pid, 'SIGCONT');
    run.kill('SIGKILL');
    await sandbox.stop('SIGTERM');
  }
}
