/**
 * The four measurements of `npm run bench`, one function each. Every row starts its own sandbox
 * process (`bin/shardmove sandbox`, counting requests) so rows do not share moves or load.
 */
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { BENCH_TOKEN, ROOT, cpuMs, spawnRun, startSandboxProc, writePlan, writeSeed } from './bench-procs.js';
import type { Inventory, RunResult, SandboxProc } from './bench-procs.js';
import type { RequestCounts } from './bench-count.js';
import { endToStart, gapsOf, readSpans } from './slots-gaps.js';
import type { EndToStart } from './slots-gaps.js';
import type { Gaps } from './slots-gaps.js';

const run = promisify(execFile);

export interface BenchConfig {
  dir: string;
  inventory: Inventory;
  workers: number;
  moveMs: number;
  failRate: number;
  faultSeed: number;
  concurrency: number;
  pollInterval: string;
  backoff: string;
  seqItems: number;
  seqPollMs: number;
  scaleProjects: number;
  /** The scale row's real run is killed when its listing is complete, or after this long. */
  scaleKillAfterMs: number;
}

export interface Left {
  projects: number;
  snippets: number;
  groups: number;
}

function sandboxArgs(c: BenchConfig, seed: string, failRate = c.failRate): string[] {
  return [
    '--workers',
    String(c.workers),
    '--move-duration',
    String(c.moveMs),
    '--seed',
    seed,
    '--move-fail-rate',
    String(failRate),
    '--fault-seed',
    String(c.faultSeed),
  ];
}

const total = (inv: Inventory) => inv.projects + inv.snippets + inv.groups;

/** Items of each kind still on the sources, read page by page (outside any measured window). */
export async function leftovers(url: string, sources: string[]): Promise<Left> {
  const left: Left = { projects: 0, snippets: 0, groups: 0 };
  const paths: [keyof Left, string][] = [
    ['projects', '/projects'],
    ['snippets', '/snippets/all'],
    ['groups', '/groups'],
  ];
  for (const src of sources) {
    for (const [kind, path] of paths) {
      for (let page = 1; ; page++) {
        const res = await request(`${url}/api/v4${path}?repository_storage=${src}&per_page=100&page=${page}`, {
          headers: { 'private-token': BENCH_TOKEN },
        });
        const body = (await res.body.json()) as unknown[];
        left[kind] += body.length;
        if (body.length < 100) break;
      }
    }
  }
  return left;
}

export interface ThrottledRow {
  items: number;
  idealMs: number;
  /** First to last request the sandbox saw from the run. */
  apiSpanMs: number;
  run: RunResult;
  requests: RequestCounts;
  /** CPU the sandbox process used during the run (ms). */
  sandboxCpuMs: number;
  left: Left;
}

/** Row 1: shardmove, throttled, against a sandbox process with `workers` and fixed-length moves. */
export async function throttledRow(c: BenchConfig): Promise<ThrottledRow> {
  const sources = Object.keys(c.inventory.storages);
  const sb = await startSandboxProc(sandboxArgs(c, writeSeed(c.dir, c.inventory)));
  try {
    const plan = writePlan(c.dir, 'bench-throttled', {
      url: sb.url,
      from: sources,
      kinds: ['projects', 'snippets', 'groups'],
      concurrency: c.concurrency,
      pollInterval: c.pollInterval,
      backoff: c.backoff,
    });
    await sb.counts();
    const cpu0 = cpuMs(sb.pid);
    const r = await spawnRun(plan, join(c.dir, 'throttled.db')).done;
    const sandboxCpuMs = cpuMs(sb.pid) - cpu0;
    const requests = await sb.counts();
    if (r.code !== 0) process.stderr.write(`shardmove run exited ${r.code}:\n${r.stderr.slice(-3000)}\n`);
    const items = total(c.inventory);
    return {
      items,
      idealMs: (items * c.moveMs) / c.workers,
      apiSpanMs: (requests.lastAt ?? 0) - (requests.firstAt ?? 0),
      run: r,
      requests,
      sandboxCpuMs,
      left: await leftovers(sb.url, sources),
    };
  } finally {
    await sb.stop();
  }
}

export interface BaselineRow {
  outcome: string;
  makespanMs: number;
  /** When the projects count last fell (the script's useful part; after it, it only waits). */
  lastProgressMs: number;
  scriptRequests: number;
  requests: RequestCounts;
  left: Left;
  error?: string;
}

/** Row 2: bench/baseline-doc.sh (curl + jq) against the same inventory and sandbox settings. */
export async function baselineRow(c: BenchConfig): Promise<BaselineRow> {
  const sources = Object.keys(c.inventory.storages);
  const sb = await startSandboxProc(sandboxArgs(c, writeSeed(c.dir, c.inventory)));
  try {
    await sb.counts();
    let out: { outcome: string; makespanSeconds: number; lastProgressSeconds: number; requests: number; left: Left };
    try {
      const { stdout } = await run(join(ROOT, 'bench', 'baseline-doc.sh'), [], {
        env: { ...process.env, GITLAB_URL: sb.url, GITLAB_TOKEN: BENCH_TOKEN, SOURCES: sources.join(' ') },
        maxBuffer: 1 << 20,
      });
      out = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as typeof out;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      return {
        outcome: 'error',
        makespanMs: 0,
        lastProgressMs: 0,
        scriptRequests: 0,
        requests: await sb.counts(),
        left: await leftovers(sb.url, sources),
        error: (e.stderr || e.message).trim(),
      };
    }
    const requests = await sb.counts();
    return {
      outcome: out.outcome,
      makespanMs: out.makespanSeconds * 1000,
      lastProgressMs: out.lastProgressSeconds * 1000,
      scriptRequests: out.requests,
      requests,
      left: out.left,
    };
  } finally {
    await sb.stop();
  }
}

export interface SequentialRow {
  items: number;
  makespanMs: number;
  requests: number;
  extrapolatedMs: number;
}

/** Row 3: one move at a time (POST, poll its move every `seqPollMs` until finished, next). */
export async function sequentialRow(c: BenchConfig): Promise<SequentialRow> {
  const n = c.seqItems;
  const all = total(c.inventory);
  const inv: Inventory = {
    projects: Math.round((n * c.inventory.projects) / all),
    snippets: Math.round((n * c.inventory.snippets) / all),
    groups: 0,
    storages: c.inventory.storages,
  };
  inv.groups = n - inv.projects - inv.snippets;
  const sb: SandboxProc = await startSandboxProc(sandboxArgs(c, writeSeed(c.dir, inv), 0));
  const headers = { 'private-token': BENCH_TOKEN, 'content-type': 'application/json' };
  try {
    const items: [string, number][] = [];
    for (const [kind, path] of [
      ['projects', '/projects'],
      ['snippets', '/snippets/all'],
      ['groups', '/groups'],
    ] as const) {
      for (const src of Object.keys(inv.storages)) {
        for (let page = 1; ; page++) {
          const res = await request(`${sb.url}/api/v4${path}?repository_storage=${src}&per_page=100&page=${page}`, {
            headers,
          });
          const body = (await res.body.json()) as { id: number }[];
          for (const it of body) items.push([kind, it.id]);
          if (body.length < 100) break;
        }
      }
    }
    await sb.counts();
    const t0 = performance.now();
    let requests = 0;
    for (const [kind, id] of items) {
      requests++;
      const res = await request(`${sb.url}/api/v4/${kind}/${id}/repository_storage_moves`, {
        method: 'POST',
        headers,
        body: '{"destination_storage_name":"cluster"}',
      });
      const move = (await res.body.json()) as { id: number; state: string };
      let state = move.state;
      while (state !== 'finished' && state !== 'failed' && state !== 'cleanup failed') {
        await new Promise((r) => setTimeout(r, c.seqPollMs));
        requests++;
        const poll = await request(`${sb.url}/api/v4/${kind}/${id}/repository_storage_moves/${move.id}`, { headers });
        state = ((await poll.body.json()) as { state: string }).state;
      }
    }
    const makespanMs = performance.now() - t0;
    return {
      items: items.length,
      makespanMs,
      requests,
      extrapolatedMs: (makespanMs / Math.max(1, items.length)) * all,
    };
  } finally {
    await sb.stop();
  }
}

export interface ScaleRow {
  projects: number;
  seedMs: number;
  dryRun: RunResult;
  dryRequests: RequestCounts;
  /** The machine's 1-minute load average when the dry run ended, and when the resume was measured. */
  dryLoad: number;
  resumeLoad: number;
  killedAfterMs: number;
  /** Whether the killed run had finished its listing (else it was killed at scaleKillAfterMs). */
  listed: boolean;
  checkpointItems: number;
  /** Spawn of the resumed process to the first request the sandbox saw from it. */
  resumeFirstCallMs: number | null;
  resumeFirstPostMs: number | null;
}

function checkpointState(file: string): { items: number; listed: boolean; inFlight: number } {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch {
    // Not created yet.
    return { items: 0, listed: false, inFlight: 0 };
  }
  try {
    const items = (db.prepare('SELECT COUNT(*) AS n FROM items').get() as { n: number }).n;
    const cur = db.prepare("SELECT done FROM cursors WHERE kind = 'projects' AND source = 'nfs-1'").get() as
      { done: number } | undefined;
    const inFlight = (
      db.prepare("SELECT COUNT(*) AS n FROM items WHERE state IN ('scheduling', 'in_flight')").get() as { n: number }
    ).n;
    return { items, listed: cur?.done === 1, inFlight };
  } catch {
    return { items: 0, listed: false, inFlight: 0 };
  } finally {
    db.close();
  }
}

/**
 * Row 4: a dry run over `scaleProjects` projects (enumeration into the checkpoint), then a real run
 * killed with SIGKILL once its listing is complete and moves are in flight, then the resume: the
 * time from spawning the resumed process to the first request the sandbox receives.
 */
export async function scaleRow(c: BenchConfig): Promise<ScaleRow> {
  const inv: Inventory = { projects: c.scaleProjects, snippets: 0, groups: 0, storages: { 'nfs-1': 1 } };
  const seed = writeSeed(c.dir, inv);
  const t0 = performance.now();
  const sb = await startSandboxProc(sandboxArgs(c, seed, 0), 600_000);
  const seedMs = performance.now() - t0;
  try {
    // Moves at the instance's own pace (concurrency = workers): the killed run's listing then takes
    // about as long as the dry run's instead of competing with thousands of POSTs a second.
    const plan = writePlan(c.dir, 'bench-scale', {
      url: sb.url,
      from: ['nfs-1'],
      kinds: ['projects'],
      concurrency: c.workers,
      pollInterval: c.pollInterval,
      backoff: c.backoff,
    });
    await sb.counts();
    const dryRun = await spawnRun(plan, join(c.dir, 'scale-dry.db'), ['--dry-run']).done;
    const dryRequests = await sb.counts();
    const dryLoad = loadavg()[0] ?? 0;
    if (dryRun.code !== 0) process.stderr.write(`dry run exited ${dryRun.code}:\n${dryRun.stderr.slice(-3000)}\n`);

    const state = join(c.dir, 'scale.db');
    const started = performance.now();
    const victim = spawnRun(plan, state);
    let listed = false;
    for (;;) {
      await new Promise((r) => setTimeout(r, 250));
      const s = checkpointState(state);
      listed = s.listed;
      if ((s.listed && s.inFlight > 0) || performance.now() - started > c.scaleKillAfterMs) break;
    }
    victim.kill('SIGKILL');
    await victim.done;
    const killedAfterMs = performance.now() - started;
    const checkpointItems = checkpointState(state).items;
    await sb.counts();
    const spawnedAt = Date.now();
    const resumed = spawnRun(plan, state);
    let first: RequestCounts | null = null;
    for (let i = 0; i < 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const w = await sb.counts();
      first ??= w.firstAt !== null ? w : null;
      if (first && (w.firstMutatingAt !== null || first.firstMutatingAt !== null)) {
        if (first.firstMutatingAt === null) first = { ...first, firstMutatingAt: w.firstMutatingAt };
        break;
      }
    }
    const resumeLoad = loadavg()[0] ?? 0;
    resumed.kill('SIGTERM');
    await resumed.done;
    return {
      projects: c.scaleProjects,
      seedMs,
      dryRun,
      dryRequests,
      dryLoad,
      resumeLoad,
      killedAfterMs,
      listed,
      checkpointItems,
      resumeFirstCallMs: first?.firstAt != null ? first.firstAt - spawnedAt : null,
      resumeFirstPostMs: first?.firstMutatingAt != null ? first.firstMutatingAt - spawnedAt : null,
    };
  } finally {
    await sb.stop();
  }
}

/** What the sandbox's own move records say about one run: read from its SQLite file. */
export interface MoveRecords {
  moves: number;
  /** Distinct items with a finished move. */
  moved: number;
  /** First move created to last move finished (ms). */
  spanMs: number;
  /** Sum over moves of created -> finished, over the sum of the moves' own durations. */
  exposure: number;
  /** Sum of the moves' own durations (ms). */
  workMs: number;
  /** The longest move's own duration (ms). */
  longestMs: number;
}

/**
 * The physical limit of a span: the moves' total work spread over the instance's
 * workers, or the longest move if that is longer. No scheduler can end sooner.
 */
export function physicalLimitMs(r: MoveRecords, workers: number): number {
  return Math.max(r.workMs / Math.max(1, workers), r.longestMs);
}

export function readMoveRecords(file: string): MoveRecords {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT item_id, kind, state, duration_ms, created_at, updated_at FROM moves').all() as {
      item_id: number;
      kind: string;
      state: string;
      duration_ms: number;
      created_at: string;
      updated_at: string;
    }[];
    let first = Infinity;
    let last = -Infinity;
    let open = 0;
    let work = 0;
    let longest = 0;
    const moved = new Set<string>();
    for (const r of rows) {
      const created = Date.parse(r.created_at);
      const ended = Date.parse(r.updated_at);
      first = Math.min(first, created);
      last = Math.max(last, ended);
      open += ended - created;
      work += r.duration_ms;
      longest = Math.max(longest, r.duration_ms);
      if (r.state === 'finished') moved.add(`${r.kind}:${r.item_id}`);
    }
    return {
      moves: rows.length,
      moved: moved.size,
      spanMs: rows.length ? last - first : 0,
      exposure: work > 0 ? open / work : 0,
      workMs: work,
      longestMs: longest,
    };
  } finally {
    db.close();
  }
}

export interface SlotsSide {
  records: MoveRecords;
  requests: RequestCounts;
  /** Orchestrator CPU (ms): shardmove's process, or the script's shell, curl and jq. */
  cpuMs: number;
  /** Orchestrator peak RSS (MB): shardmove's VmHWM, or the largest of the script's processes. */
  peakRssMb: number;
  exit: string;
  /** The machine's 1-minute load average when this side ended. */
  load: number;
  /** shardmove's checkpoint transactions and rows written (bench/bench-sqlite.ts); null for bulk. */
  checkpoint: { commits: number; statements: number; cpuAtFirstMs?: number } | null;
  /** Where the workers' idle time went (bench/slots-gaps.ts); null until the records are read. */
  gaps: Gaps | null;
  /** How long a freed worker waited for its next move (bench/slots-gaps.ts); null until read. */
  lags?: EndToStart | null;
}

/** One shardmove configuration of row 5: `move.order` and `move.queue_ahead`. */
export interface SlotsConfig {
  order: 'together' | 'by-kind';
  queueAhead: number | 'auto';
}

export interface SlotsRow {
  items: number;
  speed: number;
  pollInterval: string;
  minInterval: string;
  bulk: SlotsSide;
  /** shardmove with each configuration asked for, in that order. */
  shardmove: { config: SlotsConfig; side: SlotsSide }[];
  /** shardmove with `min_interval` = `interval` (the fixed cadence before completion prediction), when asked for. */
  fixed: SlotsSide | null;
}

/** `/usr/bin/time -f` output of the script's line: "elapsed user sys maxrss-kB". */
function parseTime(stderr: string): { cpuMs: number; peakRssMb: number } {
  const m = /^BENCHTIME (\S+) (\S+) (\d+)$/m.exec(stderr);
  return m
    ? { cpuMs: (Number(m[1]) + Number(m[2])) * 1000, peakRssMb: Number(m[3]) / 1024 }
    : { cpuMs: NaN, peakRssMb: NaN };
}

/**
 * Waits until nothing is left on `sources` and every move in the sandbox's records (`db`) has ended:
 * the bulk script watches projects only, and an item leaves its source before its move finishes.
 */
async function drained(url: string, sources: string[], db: string, limitMs: number): Promise<boolean> {
  const until = performance.now() + limitMs;
  const open = () => {
    const d = new Database(db, { readonly: true, fileMustExist: true });
    try {
      const sql = "SELECT COUNT(*) AS n FROM moves WHERE state NOT IN ('finished', 'failed', 'cleanup failed')";
      return (d.prepare(sql).get() as { n: number }).n;
    } finally {
      d.close();
    }
  };
  while (performance.now() < until) {
    const l = await leftovers(url, sources);
    if (l.projects + l.snippets + l.groups === 0 && open() === 0) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/**
 * Row 5: keep the server's move slots full. Long-tailed log-normal sizes (median `medianMb`) for
 * every kind, the sandbox's `--speed` scaling a median move to tens of ms, the operator's 5 s poll
 * and 250 ms minimum scaled by the same factor, and the cap at the sandbox's workers. The
 * documented bulk sequence and shardmove (each `move.order` and `move.queue_ahead` asked for) run
 * on the same seed, each against its own sandbox, and all are read from the sandbox's move records.
 */
export async function slotsRow(
  c: BenchConfig,
  o: {
    inventory: Inventory;
    medianMb: number;
    maxMb: number;
    speed: number;
    fixed: boolean;
    configs: SlotsConfig[];
  },
): Promise<SlotsRow> {
  const inv: Inventory = { ...o.inventory, sizeMb: { median: o.medianMb, max: o.maxMb } };
  const sources = Object.keys(inv.storages);
  const kinds = (
    [
      ['projects', inv.projects],
      ['snippets', inv.snippets],
      ['groups', inv.groups],
    ] as const
  )
    .filter(([, n]) => n > 0)
    .map(([k]) => k);
  const seed = writeSeed(c.dir, inv);
  // Speed 1 is 50 ms per MB (src/sandbox/moves/policy.ts); the same factor scales the poll.
  const scale = 1 / o.speed;
  const ms = (x: number) => `${Math.max(1, Math.round(x))}ms`;
  const pollInterval = ms(Math.max(100, 5_000 * scale));
  const minInterval = ms(250 * scale);
  const args = (db: string) => [
    '--workers',
    String(c.workers),
    '--speed',
    String(o.speed),
    '--seed',
    seed,
    '--move-fail-rate',
    '0',
    '--db',
    db,
  ];
  const empty: MoveRecords = { moves: 0, moved: 0, spanMs: 0, exposure: 0, workMs: 0, longestMs: 0 };

  const bulkDb = join(c.dir, `slots-bulk-s${o.speed}-sandbox.db`);
  let bulk: SlotsSide;
  {
    const sb = await startSandboxProc(args(bulkDb));
    let exit = 'ok';
    let stderr = '';
    try {
      await sb.counts();
      try {
        const r = await run('/usr/bin/time', ['-f', 'BENCHTIME %U %S %M', join(ROOT, 'bench', 'baseline-doc.sh')], {
          env: {
            ...process.env,
            GITLAB_URL: sb.url,
            GITLAB_TOKEN: BENCH_TOKEN,
            SOURCES: sources.join(' '),
            POLL_SECONDS: String(Math.max(0.1, 5 * scale)),
            TIMEOUT_SECONDS: '900',
          },
          maxBuffer: 1 << 20,
        });
        stderr = r.stderr;
        exit = (JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { outcome?: string }).outcome ?? 'ok';
      } catch (err) {
        const e = err as { stderr?: string; message: string };
        stderr = e.stderr ?? '';
        exit = `error: ${(e.stderr || e.message).trim().split('\n')[0]}`;
      }
      bulk = {
        records: empty,
        requests: await sb.counts(),
        ...parseTime(stderr),
        exit,
        load: 0,
        checkpoint: null,
        gaps: null,
      };
      // The script stops when the projects are gone; the snippets and wikis its bulk POSTs queued
      // behind them are still moving. Their moves belong to the span, not its requests.
      if (!(await drained(sb.url, sources, bulkDb, 600_000))) bulk.exit += '; snippets or wikis still on the source';
      bulk.load = loadavg()[0] ?? 0;
    } finally {
      await sb.stop();
    }
    bulk.records = readMoveRecords(bulkDb);
    const bulkSpans = readSpans(bulkDb);
    bulk.gaps = gapsOf(bulkSpans, c.workers);
    bulk.lags = endToStart(bulkSpans, c.workers);
  }

  const runShardmove = async (name: string, min: string, cfg: SlotsConfig): Promise<SlotsSide> => {
    const db = join(c.dir, `${name}-sandbox.db`);
    let side: SlotsSide;
    const sb = await startSandboxProc(args(db));
    try {
      const plan = writePlan(c.dir, name, {
        url: sb.url,
        from: sources,
        kinds: [...kinds],
        concurrency: c.workers,
        pollInterval,
        minInterval: min,
        backoff: c.backoff,
        queueAhead: cfg.queueAhead,
        order: cfg.order,
      });
      await sb.counts();
      const r = await spawnRun(plan, join(c.dir, `${name}.db`)).done;
      if (r.code !== 0) process.stderr.write(`shardmove run exited ${r.code}:\n${r.stderr.slice(-3000)}\n`);
      side = {
        records: empty,
        requests: await sb.counts(),
        cpuMs: r.cpuMs,
        peakRssMb: r.peakRssMb,
        exit: `exit ${r.code}`,
        load: loadavg()[0] ?? 0,
        checkpoint: r.checkpoint,
        gaps: null,
      };
    } finally {
      await sb.stop();
    }
    side.records = readMoveRecords(db);
    const spans = readSpans(db);
    side.gaps = gapsOf(spans, c.workers);
    side.lags = endToStart(spans, c.workers);
    return side;
  };
  const shardmove: SlotsRow['shardmove'] = [];
  for (const cfg of o.configs) {
    const name = `bench-slots-s${o.speed}-${cfg.order}-qa${cfg.queueAhead}`;
    shardmove.push({ config: cfg, side: await runShardmove(name, minInterval, cfg) });
  }
  const fixed = o.fixed
    ? await runShardmove(`bench-slots-fixed-s${o.speed}`, pollInterval, { order: 'together', queueAhead: 0 })
    : null;
  return {
    items: inv.projects + inv.snippets + inv.groups,
    speed: o.speed,
    pollInterval,
    minInterval,
    bulk,
    shardmove,
    fixed,
  };
}
