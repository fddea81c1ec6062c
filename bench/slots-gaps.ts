/**
 * Where row 5's time goes between the physical limit and the span, from the sandbox's own move
 * records. A finished move's record keeps its creation and its end (`updated_at`), and with the
 * disk model off its own duration is fixed when it is scheduled, so its start is its end less that
 * duration. Over the span (first move created to last move ended) the workers' idle time is
 * `workers x span - work`, and every idle moment of a worker falls in one of three kinds:
 *
 * - refill: no move is waiting on the instance and some move is still to be created: the
 *   orchestrator has not asked yet (the poll and POST round trip at the ends of moves, or bulk's
 *   jobs still enqueueing);
 * - queued: a move waits on the instance while a worker is idle: the sandbox's own delay in
 *   picking it up (GitLab's Sidekiq takes the next job as soon as a thread is free);
 * - tail: every move is created and none waits: the workers that finished first wait for the
 *   last long ones (the order's granularity, not a round trip).
 *
 * Each is printed as its share of the physical limit (idle / workers / limit), so the three add up
 * to span / limit - 1 when the limit is the work's. `ideal` is the span the same moves would take
 * in the same order with every refill and pickup instantaneous (greedy list scheduling), and
 * `lpt` the same for the moves ordered largest first: what no round trip can beat.
 *
 * `node --import tsx bench/slots-gaps.ts WORKERS SANDBOX.db...` (the scratch directory of
 * `BENCH_ROWS=5 BENCH_KEEP=1 npm run bench` holds the row's sandbox files).
 */
import Database from 'better-sqlite3';

/** One ended move: its times on the sandbox's clock (ms since the epoch) and its id. */
export interface MoveSpan {
  id: number;
  created: number;
  start: number;
  end: number;
}

export interface Gaps {
  moves: number;
  spanMs: number;
  workMs: number;
  limitMs: number;
  /** Idle worker time by kind (ms of one worker). */
  refillMs: number;
  queuedMs: number;
  tailMs: number;
  /** The idle worker time before the first `workers` moves had all started (part of refill/queued). */
  rampMs: number;
  /** Greedy list schedule of the same moves in id order, and largest first. */
  idealMs: number;
  lptMs: number;
}

/** Reads every ended move of a sandbox file; the start is the end less the move's own duration. */
export function readSpans(file: string): MoveSpan[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        "SELECT id, duration_ms, created_at, updated_at FROM moves WHERE state IN ('finished', 'failed', 'cleanup failed')",
      )
      .all() as { id: number; duration_ms: number; created_at: string; updated_at: string }[];
    return rows.map((r) => {
      const end = Date.parse(r.updated_at);
      return { id: r.id, created: Date.parse(r.created_at), start: end - r.duration_ms, end };
    });
  } finally {
    db.close();
  }
}

/** Makespan of greedy list scheduling of `durations` (in that order) on `workers` workers. */
export function listScheduleMs(durations: readonly number[], workers: number): number {
  const free = new Array<number>(Math.max(1, workers)).fill(0);
  for (const d of durations) {
    let best = 0;
    for (let i = 1; i < free.length; i++) if ((free[i] as number) < (free[best] as number)) best = i;
    free[best] = (free[best] as number) + d;
  }
  return Math.max(...free);
}

/** Splits the workers' idle time over the span into refill, queued and tail (see the header). */
export function gapsOf(moves: readonly MoveSpan[], workers: number): Gaps {
  if (moves.length === 0)
    return {
      moves: 0,
      spanMs: 0,
      workMs: 0,
      limitMs: 0,
      refillMs: 0,
      queuedMs: 0,
      tailMs: 0,
      rampMs: 0,
      idealMs: 0,
      lptMs: 0,
    };
  // Events: +1 running at a start, -1 at an end; +1 waiting at a creation, -1 at a start; -1 to create.
  type Ev = { t: number; running: number; waiting: number; toCreate: number };
  const evs: Ev[] = [];
  for (const m of moves) {
    evs.push({ t: m.created, running: 0, waiting: 1, toCreate: -1 });
    evs.push({ t: m.start, running: 1, waiting: -1, toCreate: 0 });
    evs.push({ t: m.end, running: -1, waiting: 0, toCreate: 0 });
  }
  evs.sort((a, b) => a.t - b.t);
  const first = evs[0]?.t ?? 0;
  const last = Math.max(...moves.map((m) => m.end));
  let running = 0;
  let waiting = 0;
  let toCreate = moves.length;
  let refill = 0;
  let queued = 0;
  let tail = 0;
  let ramp = 0;
  let starts = 0;
  let at = first;
  for (const e of evs) {
    const dt = e.t - at;
    if (dt > 0) {
      const idle = Math.max(0, workers - running) * dt;
      if (waiting > 0) queued += idle;
      else if (toCreate > 0) refill += idle;
      else tail += idle;
      if (starts < workers) ramp += idle;
      at = e.t;
    }
    running += e.running;
    waiting += e.waiting;
    toCreate += e.toCreate;
    if (e.running > 0) starts++;
  }
  const durations = moves.map((m) => m.end - m.start);
  const work = durations.reduce((a, b) => a + b, 0);
  const byId = [...moves].sort((a, b) => a.id - b.id).map((m) => m.end - m.start);
  return {
    moves: moves.length,
    spanMs: last - first,
    workMs: work,
    limitMs: Math.max(work / Math.max(1, workers), ...durations),
    refillMs: refill,
    queuedMs: queued,
    tailMs: tail,
    rampMs: ramp,
    idealMs: listScheduleMs(byId, workers),
    lptMs: listScheduleMs(
      [...durations].sort((a, b) => b - a),
      workers,
    ),
  };
}

/** One line: span / limit, and each kind of idle time as its share of the limit. */
export function gapsLine(name: string, g: Gaps, workers: number): string {
  const share = (ms: number) => (g.limitMs > 0 ? ms / workers / g.limitMs : 0).toFixed(3);
  const ratio = (ms: number) => (g.limitMs > 0 ? ms / g.limitMs : 0).toFixed(3);
  return (
    `${name.padEnd(20)} span/limit ${ratio(g.spanMs)}  refill ${share(g.refillMs)} (ramp ${share(g.rampMs)})  ` +
    `queued ${share(g.queuedMs)}  tail ${share(g.tailMs)}  ideal(order) ${ratio(g.idealMs)}  lpt ${ratio(g.lptMs)}`
  );
}

/** How long a worker waited from a move's end to its next start, over the run (ms). */
export interface EndToStart {
  /** Ends paired with a later start (every end but the last `workers`, about). */
  n: number;
  meanMs: number;
  p90Ms: number;
  p99Ms: number;
  /** Gaps of 100 ms or more: how many, and their sum (ms of one worker). */
  long: number;
  longMs: number;
}

/**
 * Each start after the first `workers` takes the earliest end not yet taken (a freed worker takes
 * the next move): the wait between them is the refill and pickup a move's end cost its slot, which
 * says where the idle time sits (many short waits, or a few long ones) better than its sum.
 */
export function endToStart(moves: readonly MoveSpan[], workers: number): EndToStart {
  const ends = moves.map((m) => m.end).sort((a, b) => a - b);
  const starts = moves.map((m) => m.start).sort((a, b) => a - b);
  const lags: number[] = [];
  let j = 0;
  for (let i = workers; i < starts.length; i++) {
    const st = starts[i] as number;
    // Half a millisecond of slack: the records keep milliseconds, a start at its end's moment is no wait.
    if (j < ends.length && (ends[j] as number) <= st + 0.5) lags.push(Math.max(0, st - (ends[j++] as number)));
  }
  lags.sort((a, b) => a - b);
  const at = (p: number) => (lags.length === 0 ? 0 : (lags[Math.floor(p * (lags.length - 1))] as number));
  const long = lags.filter((l) => l >= 100);
  return {
    n: lags.length,
    meanMs: lags.length === 0 ? 0 : lags.reduce((a, b) => a + b, 0) / lags.length,
    p90Ms: at(0.9),
    p99Ms: at(0.99),
    long: long.length,
    longMs: long.reduce((a, b) => a + b, 0),
  };
}

/** One line of {@link endToStart}. */
export function endToStartLine(name: string, e: EndToStart): string {
  return (
    `${name.padEnd(20)} end to next start: mean ${e.meanMs.toFixed(1)} ms, p90 ${e.p90Ms.toFixed(0)} ms, ` +
    `p99 ${e.p99Ms.toFixed(0)} ms, ${e.long} of ${e.n} over 100 ms (${(e.longMs / 1000).toFixed(1)} s of one slot)`
  );
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  const [w, ...files] = process.argv.slice(2);
  const workers = Number(w);
  if (!Number.isInteger(workers) || workers < 1 || files.length === 0) {
    process.stderr.write('usage: slots-gaps.ts WORKERS SANDBOX.db...\n');
    process.exit(2);
  }
  for (const f of files) {
    const spans = readSpans(f);
    const name = f.replace(/.*\//, '');
    process.stdout.write(
      `${gapsLine(name, gapsOf(spans, workers), workers)}\n${endToStartLine(name, endToStart(spans, workers))}\n`,
    );
  }
}
