/**
 * Row 8 of `npm run bench` (`BENCH_AUTO=1`): `move.concurrency: auto` against fixed caps on the
 * sandbox's disk model. One long-tailed inventory (test/support/long-tail-inventory.ts, no fork
 * networks) on `nfs-1`, moved to `cluster`; both disks have a bandwidth (the seed's
 * `instance.storage_bandwidth`), so copies running at once share them and every move also has its
 * fixed part (job start, checksums, switch, cleanup). Each side runs against its own sandbox
 * process on the same seed: shardmove at each fixed cap, shardmove with `concurrency: auto`, and
 * shardmove in `move.mode: bulk` (everything enqueued; the sandbox's workers pace it). Every figure
 * is read from the sandbox's own move records: span (first move created to last one ended),
 * read-only exposure (the sum over moves of created to ended: a project is read-only from its
 * move's scheduling to its end), requests per moved item (counted by the sandbox), and the physical
 * limit: the bytes through the busiest disk over its bandwidth, or the longest move alone on the
 * disks, whichever is larger (or the fixed parts spread over the workers, if that is larger still).
 *
 * Then the same sweep with another tenant taking `share` of one disk's bandwidth (a seed
 * `instance.disk_busy` window) for the middle third of the quiet sweep's best fixed-cap run, and,
 * for `auto`, when its `cap.changed` events (from the run's checkpoint) lowered the cap after the
 * window began and raised it after the window ended. The sandbox's clock is the wall clock; a
 * second of it carries `--speed` seconds of bytes and fixed parts, so times are printed both ways.
 *
 * Knobs (env): BENCH_AUTO_PROJECTS=400 BENCH_AUTO_MEDIAN_MB=32 BENCH_AUTO_SIGMA=1.4
 * BENCH_AUTO_SEED=41 (inventory draw) BENCH_AUTO_SPEED=20 BENCH_AUTO_WORKERS=64 (sandbox workers)
 * BENCH_AUTO_CAPS=2,4,8,16,32 BENCH_AUTO_BW=nfs-1:200MiB,cluster:400MiB
 * BENCH_AUTO_TENANT=nfs-1:0.5 (storage:share; `none` skips the tenant sweep)
 * BENCH_AUTO_SIDES=fixed,auto,bulk BENCH_AUTO_ALL_WINDOWS=1 (every look of the limiter, not only the judged windows)
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parseDocument } from 'yaml';
import { FIXED_CLEANUP_MS, FIXED_COPY_MS, fixedPartMs } from '../src/sandbox/moves/policy.js';
import { parseBandwidth } from '../src/sandbox/seed-disks.js';
import { longTailInventory, seedSandbox } from '../test/support/long-tail-inventory.js';
import type { LongTailInventory } from '../test/support/long-tail-inventory.js';
import { ROOT, spawnRun, startSandboxProc, writePlan } from './bench-procs.js';
import type { RequestCounts } from './bench-count.js';
import { logPath } from '../src/runtime/paths.js';

const SOURCE = 'nfs-1';
const DESTINATION = 'cluster';

export interface AutoBenchConfig {
  dir: string;
  projects: number;
  medianMb: number;
  sigma: number;
  inventorySeed: number;
  speed: number;
  workers: number;
  /** Bytes per second of each limited disk. */
  bandwidth: Record<string, number>;
  caps: number[];
  sides: Set<'fixed' | 'auto' | 'bulk'>;
  /** Another tenant's share of one disk for the middle third of the run, or null (no tenant sweep). */
  tenant: { storage: string; share: number } | null;
}

/** A tenant's window as the seed gives it: ms of the sandbox's clock from its start. */
export interface TenantWindow {
  storage: string;
  share: number;
  fromMs: number;
  toMs: number;
}

export interface CapChange {
  /** Sandbox clock, ms from its start. */
  atMs: number;
  cap: number;
  previous: number | null;
  limit: string;
  reason: string;
}

export interface AutoSide {
  name: string;
  /** First move created to last move ended (ms). */
  spanMs: number;
  /** Sum over moves of created to ended (ms): time read-only. */
  exposureMs: number;
  /** First move created, ms from the sandbox's start. */
  firstMs: number;
  moves: number;
  moved: number;
  requests: RequestCounts;
  limit: { ms: number; why: string };
  exit: string;
  load: number;
  caps: CapChange[];
  /** `auto`'s windows as its run logged them (debug level), each judged or looked at. */
  windows: AutoWindowSeen[];
}

/** One line of the limiter's debug log: when (ms from the sandbox's start) and what it measured. */
export interface AutoWindowSeen {
  atMs: number;
  how: string;
  cap: number;
  bytesPerSec: number;
  msPerByte: number | null;
  moves: number;
  ms: number;
  slotVsPeak: number | null;
  /** Bytes per ms the copies got together (absent or null: not measured). */
  bandwidth?: number | null;
  inFlight: number | null;
}

/** `nfs-1:200MiB,cluster:400MiB` as bytes per second per storage. */
export function parseBandwidths(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of text.split(',').filter((p) => p.trim() !== '')) {
    const [name, value] = part.split(':').map((x) => x.trim());
    const bytes = parseBandwidth(value);
    if (!name || bytes === null)
      throw new Error(`BENCH_AUTO_BW: "${part}" is not storage:bandwidth (nfs-1:200MiB, cluster:400MiB)`);
    out[name] = bytes;
  }
  return out;
}

/** `nfs-1:0.5` as a tenant, `none` as none. */
export function parseTenant(text: string): AutoBenchConfig['tenant'] {
  if (text === 'none') return null;
  const [storage, share] = text.split(':').map((x) => x.trim());
  const s = Number(share);
  if (!storage || !(s > 0 && s < 1))
    throw new Error(`BENCH_AUTO_TENANT: "${text}" is not storage:share with a share between 0 and 1, or none`);
  return { storage, share: s };
}

/** The row's seed: the built-in one's instance and credentials, the inventory, the disks. */
function writeDiskSeed(c: AutoBenchConfig, inv: LongTailInventory, window: TenantWindow | null): string {
  const doc = parseDocument(readFileSync(join(ROOT, 'plans', 'sandbox.yaml'), 'utf8'));
  doc.deleteIn(['inventory', 'generate']);
  seedSandbox(doc, inv);
  doc.setIn(['instance', 'storage_bandwidth'], { ...c.bandwidth });
  if (window)
    doc.setIn(
      ['instance', 'disk_busy'],
      [{ storage: window.storage, share: window.share, from: `${window.fromMs}ms`, to: `${window.toMs}ms` }],
    );
  const file = join(c.dir, `seed-auto-${window ? 'tenant' : 'quiet'}.yaml`);
  writeFileSync(file, doc.toString());
  return file;
}

/** Time to push `bytes` through a disk of `perMs` bytes per ms from `start`, with a tenant's window. */
function pushMs(bytes: number, perMs: number, start: number, window: TenantWindow | null): number {
  if (!window) return bytes / perMs;
  let t = start;
  let left = bytes;
  const edges = [window.fromMs, window.toMs, Number.POSITIVE_INFINITY];
  for (const edge of edges) {
    if (edge <= t) continue;
    const rate = t >= window.fromMs && t < window.toMs ? perMs * (1 - window.share) : perMs;
    const can = (edge - t) * rate;
    if (can >= left) return t + left / rate - start;
    left -= can;
    t = edge;
  }
  return t - start;
}

interface MoveRow {
  item_id: number;
  state: string;
  source: string;
  destination: string;
  created_at: string;
  updated_at: string;
}

/**
 * The sandbox's move records: span, exposure, and the physical limit for these moves (bytes per
 * disk from the inventory's sizes; the tenant's window counted against its disk).
 */
function readRecords(
  c: AutoBenchConfig,
  inv: LongTailInventory,
  db: string,
  readyAt: number,
  window: TenantWindow | null,
): Pick<AutoSide, 'spanMs' | 'exposureMs' | 'firstMs' | 'moves' | 'moved' | 'limit'> {
  const d = new Database(db, { readonly: true, fileMustExist: true });
  let rows: MoveRow[];
  try {
    rows = d
      .prepare("SELECT item_id, state, source, destination, created_at, updated_at FROM moves WHERE kind = 'project'")
      .all() as MoveRow[];
  } finally {
    d.close();
  }
  const size = new Map(inv.projects.map((p) => [p.id, p.sizeBytes]));
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  let exposure = 0;
  const moved = new Set<number>();
  const perDisk = new Map<string, number>();
  let longest = 0;
  let fixedWork = 0;
  const fixed = fixedPartMs(FIXED_COPY_MS, c.speed) + fixedPartMs(FIXED_CLEANUP_MS, c.speed);
  const perMs = (disk: string) => ((c.bandwidth[disk] ?? Number.POSITIVE_INFINITY) * c.speed) / 1000;
  for (const r of rows) {
    const created = Date.parse(r.created_at);
    const ended = Date.parse(r.updated_at);
    first = Math.min(first, created);
    last = Math.max(last, ended);
    exposure += ended - created;
    if (r.state !== 'finished') continue;
    moved.add(r.item_id);
    const bytes = size.get(r.item_id) ?? 0;
    for (const disk of new Set([r.source, r.destination]))
      if (c.bandwidth[disk] !== undefined) perDisk.set(disk, (perDisk.get(disk) ?? 0) + bytes);
    longest = Math.max(longest, fixed + bytes / Math.min(perMs(r.source), perMs(r.destination)));
    fixedWork += fixed;
  }
  const firstMs = first - readyAt;
  const limits: [number, string][] = [
    [longest, 'the longest move alone'],
    [fixedWork / c.workers, `the fixed parts over ${c.workers} workers`],
  ];
  for (const [disk, bytes] of perDisk) {
    const w = window && window.storage === disk ? window : null;
    limits.push([
      pushMs(bytes, perMs(disk), firstMs, w),
      `${disk}'s bytes over its bandwidth${w ? ' (tenant too)' : ''}`,
    ]);
  }
  const [ms, why] = limits.reduce((a, b) => (b[0] > a[0] ? b : a));
  return {
    spanMs: rows.length ? last - first : 0,
    exposureMs: exposure,
    firstMs,
    moves: rows.length,
    moved: moved.size,
    limit: { ms, why },
  };
}

/** The run's `cap.changed` events from its checkpoint, on the sandbox's clock. */
function readWindows(state: string, readyAt: number): AutoWindowSeen[] {
  const file = logPath(state);
  if (!existsSync(file)) return [];
  const out: AutoWindowSeen[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"auto: window measured"')) continue;
    try {
      const x = JSON.parse(line) as { time: number; auto: Omit<AutoWindowSeen, 'atMs'> };
      out.push({ ...x.auto, atMs: x.time - readyAt });
    } catch {
      // A line cut short by a killed run: the others still say enough.
    }
  }
  return out;
}

/**
 * The windows worth reading: every judged and settled one, and of the peeks and the looks at a
 * gain between two of them only the one with the highest time per byte a slot against the peak.
 */
function windowLines(windows: readonly AutoWindowSeen[], sec: (ms: number) => string): string[] {
  const lines: string[] = [];
  let best: AutoWindowSeen | null = null;
  const row = (w: AutoWindowSeen) =>
    `    ${sec(w.atMs).padStart(7)} s  ${w.how.padEnd(7)} cap ${String(w.cap).padStart(2)}  ${String(w.moves).padStart(3)} moves in ${sec(w.ms)} s  ` +
    `${(w.bytesPerSec / 1e6).toFixed(0).padStart(5)} MB/s  ${w.msPerByte === null ? '     -' : (w.msPerByte * 1e6).toFixed(2).padStart(6)} ms/MB  ` +
    `a slot x${w.slotVsPeak === null ? '-' : w.slotVsPeak.toFixed(2)} of the peak  ` +
    `copies ${w.bandwidth == null ? '-' : `${((w.bandwidth * 1000) / 1e6).toFixed(0)} MB/s`}  in flight ${w.inFlight ?? '-'}`;
  // BENCH_AUTO_ALL_WINDOWS=1: every look, not only the highest between two judged windows.
  const all = process.env.BENCH_AUTO_ALL_WINDOWS === '1';
  for (const w of windows) {
    if (!all && (w.how === 'peek' || w.how === 'open')) {
      if (best === null || (w.slotVsPeak ?? 0) > (best.slotVsPeak ?? 0)) best = w;
      continue;
    }
    if (best) lines.push(row(best));
    best = null;
    lines.push(row(w));
  }
  if (best) lines.push(row(best));
  return lines;
}

function readCaps(state: string, readyAt: number): CapChange[] {
  const d = new Database(state, { readonly: true, fileMustExist: true });
  try {
    const rows = d.prepare("SELECT at, data FROM events WHERE type = 'cap.changed' ORDER BY seq").all() as {
      at: number;
      data: string;
    }[];
    return rows.map((r) => {
      const x = JSON.parse(r.data) as { cap: number; limit: string; reason: string; previous: { cap: number } | null };
      return {
        atMs: r.at - readyAt,
        cap: x.cap,
        previous: x.previous?.cap ?? null,
        limit: x.limit,
        reason: x.reason,
      };
    });
  } finally {
    d.close();
  }
}

type SidePlan = { name: string; concurrency: number | 'auto'; mode: 'throttled' | 'bulk' };

async function runSide(
  c: AutoBenchConfig,
  inv: LongTailInventory,
  seed: string,
  side: SidePlan,
  window: TenantWindow | null,
): Promise<AutoSide> {
  const tag = `${window ? 'tenant' : 'quiet'}-${side.name.replace(/\s+/g, '')}`;
  const db = join(c.dir, `auto-${tag}-sandbox.db`);
  const state = join(c.dir, `auto-${tag}.db`);
  const sb = await startSandboxProc([
    '--workers',
    String(c.workers),
    '--speed',
    String(c.speed),
    '--seed',
    seed,
    '--move-fail-rate',
    '0',
    '--db',
    db,
  ]);
  // The disk model's windows count from the engine's creation, just before the sandbox says it is ready.
  const readyAt = Date.now();
  let exit: string;
  let requests: RequestCounts;
  try {
    // The operator's 5 s poll and 250 ms minimum, compressed as the sandbox compresses time.
    const plan = writePlan(c.dir, `bench-auto-${tag}`, {
      url: sb.url,
      from: [SOURCE],
      kinds: ['projects'],
      concurrency: side.concurrency,
      mode: side.mode,
      pollInterval: `${Math.max(1, Math.round(5000 / c.speed))}ms`,
      minInterval: `${Math.max(1, Math.round(250 / c.speed))}ms`,
      backoff: '250ms',
    });
    await sb.counts();
    // The limiter's windows go to the run's log at debug level (printed under the sweep's table).
    const r = await spawnRun(plan, state, [], side.concurrency === 'auto' ? { LOG_LEVEL: 'debug' } : {}).done;
    if (r.code !== 0)
      process.stderr.write(`shardmove run (${side.name}) exited ${r.code}:\n${r.stderr.slice(-3000)}\n`);
    exit = `exit ${r.code}`;
    requests = await sb.counts();
  } finally {
    await sb.stop();
  }
  return {
    name: side.name,
    ...readRecords(c, inv, db, readyAt, window),
    requests,
    exit,
    load: loadavg()[0] ?? 0,
    caps: readCaps(state, readyAt),
    windows: side.concurrency === 'auto' ? readWindows(state, readyAt) : [],
  };
}

export interface AutoSweep {
  window: TenantWindow | null;
  sides: AutoSide[];
}

export interface AutoRow {
  inventory: { projects: number; bytes: number; largest: number };
  quiet: AutoSweep;
  tenant: AutoSweep | null;
}

function sidesOf(c: AutoBenchConfig): SidePlan[] {
  const out: SidePlan[] = [];
  if (c.sides.has('fixed'))
    for (const cap of c.caps) out.push({ name: `cap ${cap}`, concurrency: cap, mode: 'throttled' });
  if (c.sides.has('auto')) out.push({ name: 'auto', concurrency: 'auto', mode: 'throttled' });
  // Bulk's concurrency only bounds the per-item retries after the bulk POST.
  if (c.sides.has('bulk')) out.push({ name: 'bulk', concurrency: 10, mode: 'bulk' });
  return out;
}

/** The best fixed cap of a sweep: the shortest span (null: no fixed side ran). */
export function bestFixed(sweep: AutoSweep): AutoSide | null {
  const fixed = sweep.sides.filter((s) => s.name.startsWith('cap '));
  return fixed.length ? fixed.reduce((a, b) => (b.spanMs < a.spanMs ? b : a)) : null;
}

/** Both sweeps; `say` tells of progress (stderr). */
export async function autoRow(c: AutoBenchConfig, say: (m: string) => void): Promise<AutoRow> {
  const inv = longTailInventory({
    projects: c.projects,
    networks: 0,
    seed: c.inventorySeed,
    medianBytes: c.medianMb * 2 ** 20,
    sigma: c.sigma,
    source: SOURCE,
  });
  const sides = sidesOf(c);
  const sweep = async (window: TenantWindow | null): Promise<AutoSweep> => {
    const seed = writeDiskSeed(c, inv, window);
    const out: AutoSide[] = [];
    for (const side of sides) {
      say(`row 8: ${window ? 'tenant' : 'quiet'} ${side.name}...`);
      out.push(await runSide(c, inv, seed, side, window));
    }
    return { window, sides: out };
  };
  const quiet = await sweep(null);
  let tenant: AutoSweep | null = null;
  if (c.tenant) {
    // The middle third of the quiet sweep's best fixed-cap run (or its first side), on the sandbox's clock.
    const ref = bestFixed(quiet) ?? quiet.sides[0];
    if (ref) {
      const from = Math.round(ref.firstMs + ref.spanMs / 3);
      const to = Math.round(ref.firstMs + (2 * ref.spanMs) / 3);
      tenant = await sweep({ storage: c.tenant.storage, share: c.tenant.share, fromMs: from, toMs: to });
    }
  }
  const bytes = inv.projects.reduce((a, p) => a + p.sizeBytes, 0);
  const largest = inv.projects.reduce((a, p) => Math.max(a, p.sizeBytes), 0);
  return { inventory: { projects: inv.projects.length, bytes, largest }, quiet, tenant };
}

/** When `auto` lowered its cap after the window opened, and raised it after the window closed. */
export function tenantResponse(
  side: AutoSide,
  window: TenantWindow,
): { lowered: CapChange | null; raised: CapChange | null } {
  const own = side.caps.filter((x) => x.limit === 'plan' && x.previous !== null);
  const lowered = own.find((x) => x.atMs >= window.fromMs && x.cap < (x.previous as number)) ?? null;
  const raised =
    own.find((x) => x.atMs >= Math.max(window.toMs, lowered?.atMs ?? 0) && x.cap > (x.previous as number)) ?? null;
  return { lowered, raised };
}

const sec = (ms: number) => (ms / 1000).toFixed(2);

/** The row's lines: one table per sweep, the acceptance ratios, auto's cap timeline. */
export function autoLines(c: AutoBenchConfig, r: AutoRow): string[] {
  const out: string[] = [];
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  const bw = Object.entries(c.bandwidth)
    .map(([k, v]) => `${k} ${mib(v)}/s`)
    .join(', ');
  out.push(
    `8. concurrency auto vs fixed caps on the disk model: ${r.inventory.projects} projects ${SOURCE} -> ${DESTINATION}, ` +
      `log-normal sizes (median ${c.medianMb} MiB, sigma ${c.sigma}, ${mib(r.inventory.bytes)} in all, largest ${mib(r.inventory.largest)}), ` +
      `disks ${bw}, --speed ${c.speed}, ${c.workers} workers, poll ${Math.round(5000 / c.speed)} ms (5 s scaled)`,
  );
  for (const sweep of [r.quiet, r.tenant]) {
    if (!sweep) continue;
    const w = sweep.window;
    out.push(
      w
        ? `  another tenant takes ${Math.round(w.share * 100)}% of ${w.storage} from ${sec(w.fromMs)} s to ${sec(w.toMs)} s of the sandbox's clock`
        : '  quiet disks',
    );
    const best = bestFixed(sweep);
    out.push(
      `  ${'side'.padEnd(8)} ${'span s'.padStart(7)} ${'/limit'.padStart(6)} ${'/best'.padStart(6)} ${'expo s'.padStart(8)} ${'/best'.padStart(6)} ${'req/it'.padStart(6)} ${'moved'.padStart(5)} ${'load'.padStart(5)}`,
    );
    for (const s of sweep.sides) {
      const ratio = (a: number, b: number | undefined) => (b ? (a / b).toFixed(3) : 'n/a');
      out.push(
        `  ${s.name.padEnd(8)} ${sec(s.spanMs).padStart(7)} ${ratio(s.spanMs, s.limit.ms).padStart(6)} ` +
          `${ratio(s.spanMs, best?.spanMs).padStart(6)} ${sec(s.exposureMs).padStart(8)} ` +
          `${ratio(s.exposureMs, best?.exposureMs).padStart(6)} ${(s.requests.total / Math.max(1, s.moved)).toFixed(2).padStart(6)} ` +
          `${String(s.moved).padStart(5)} ${s.load.toFixed(1).padStart(5)}${s.exit === 'exit 0' ? '' : `  ${s.exit}`}`,
      );
    }
    const limits = [...new Set(sweep.sides.map((s) => `${sec(s.limit.ms)} s (${s.limit.why})`))];
    out.push(`  limit ${limits.join('; ')}`);
    const auto = sweep.sides.find((s) => s.name === 'auto');
    if (auto && best) {
      const target = w ? 1.2 : 1.15;
      out.push(
        `  auto vs best fixed (${best.name}): span ${(auto.spanMs / best.spanMs).toFixed(3)}x (target <= ${w ? 'n/a' : '1.05'}), ` +
          `exposure ${(auto.exposureMs / best.exposureMs).toFixed(3)}x (target <= ${target})`,
      );
    }
    if (auto) {
      const own = auto.caps.filter((x) => x.limit === 'plan');
      out.push(
        `  auto's caps (s of the sandbox's clock: cap): ${own.map((x) => `${sec(x.atMs)}: ${x.cap}`).join(', ')}`,
      );
      for (const x of own) out.push(`    ${sec(x.atMs).padStart(7)} s  ${x.cap}  ${x.reason}`);
      if (auto.windows.length > 0) {
        out.push("  auto's windows (peeks and open looks: the highest between two judged):");
        out.push(...windowLines(auto.windows, sec));
      }
      if (w) {
        const { lowered, raised } = tenantResponse(auto, w);
        const after = (x: CapChange | null, edge: number, what: string) =>
          x
            ? `to ${x.cap}, ${sec(x.atMs - edge)} s after ${what} (${sec((x.atMs - edge) * c.speed)} s scaled): ${x.reason}`
            : `never after ${what}`;
        out.push(`  auto lowered the cap ${after(lowered, w.fromMs, 'the window opened')} (target: within 60 s)`);
        out.push(`  auto raised the cap ${after(raised, w.toMs, 'it closed')}`);
      }
    }
  }
  out.push(
    '  span: first move created to last ended; expo: sum over moves of created to ended (read-only time);',
    '  /best: over the fixed cap with the shortest span; req/it: requests the sandbox counted per moved project',
  );
  return out;
}
