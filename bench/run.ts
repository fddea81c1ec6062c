/**
 * `npm run bench`: shardmove against the documented sequence and a one-at-a-time script, on the
 * same sandbox settings, plus the 1,000,000-project scale check. Prints one table. Each row starts
 * its own `bin/shardmove sandbox` process; requests are counted on the sandbox side (a preload
 * subscribed to Node's http.server.request.start channel, bench/bench-count.ts), the
 * orchestrator's peak RSS is its VmHWM from /proc, checkpoint writes are counted by a preload
 * wrapping better-sqlite3 (bench/bench-sqlite.ts).
 *
 * Knobs (env): BENCH_ROWS=1,2,3,4 (5, 6 and 7 on request)  BENCH_PROJECTS=20000 BENCH_SNIPPETS=2000 BENCH_GROUPS=500
 * BENCH_WORKERS=50 BENCH_MOVE_MS=20 BENCH_FAIL_RATE=0.02 BENCH_CONCURRENCY BENCH_POLL=...
 * BENCH_SEQ_ITEMS=1000 BENCH_SEQ_POLL_MS=20 BENCH_SCALE_PROJECTS=1000000 BENCH_SCALE_KILL_S=240
 * Row 5 (keep the slots full; every figure from the sandbox's own move records):
 * BENCH_SLOTS_PROJECTS=2000 BENCH_SLOTS_SNIPPETS=1000 BENCH_SLOTS_GROUPS=400 (all on one source)
 * BENCH_SLOTS_MEDIAN_MB=20 BENCH_SLOTS_MAX_MB=20000 BENCH_SLOTS_SPEEDS=20,5 BENCH_SLOTS_WORKERS=20 (= the cap)
 * BENCH_SLOTS_ORDERS=by-kind,together (move.order) BENCH_SLOTS_QUEUE_AHEAD=0,2,auto (move.queue_ahead):
 * at each speed, the documented bulk sequence, then one shardmove run per order and queue_ahead
 * (`auto` with `together` only), all in one bench run on one machine
 * BENCH_SLOTS_FIXED=1 (also shardmove at the fixed poll cadence, min_interval = interval)
 * Row 5 also prints, per side, the workers' idle time split into refill, queued and tail (bench/slots-gaps.ts).
 * Row 6: the demo (`npm start`'s plan and in-process sandbox), its idle share of slots from its event log.
 * Row 7: placement on two destinations of a long-tailed inventory with fork networks, equal and 2:1
 * weights (bench/bench-placement.ts, in-process on a fake clock: its knobs are listed there).
 * Row 8 (BENCH_AUTO=1, which alone runs only this row; or BENCH_ROWS=8): `move.concurrency: auto`
 * against fixed caps 2 to 32 and bulk on the sandbox's disk model, quiet and with another tenant
 * taking half of a disk for a third of the run (bench/bench-auto.ts: its knobs are listed there).
 * BENCH_BACKOFF=250ms BENCH_KEEP=1 (keep the scratch directory) BENCH_VERBOSE=1
 * BENCH_RUN_ARGS="--cpu-prof --cpu-prof-dir=DIR" (node flags for the orchestrator processes),
 * BENCH_SANDBOX_ARGS likewise for the sandbox processes. BENCH_SQLITE_DEBUG=1: the orchestrator's
 * checkpoint statements by SQL, in <state>.bench-sqlite.json (with BENCH_KEEP=1).
 *
 * The orchestrator's CPU is its own process.cpuUsage() at exit (user + system, every thread), and
 * the part of it spent before its first checkpoint write (start-up: module loading, which tsx
 * transpiles in a clone without a current build, and the plan) is printed apart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchConfig, Left } from './bench-rows.js';
import { baselineRow, physicalLimitMs, scaleRow, sequentialRow, slotsRow, throttledRow } from './bench-rows.js';
import type { SlotsConfig, SlotsSide } from './bench-rows.js';
import { demoIdleRow } from './bench-demo.js';
import { placementLines, placementRows } from './bench-placement.js';
import { autoLines, autoRow, parseBandwidths, parseTenant } from './bench-auto.js';
import type { AutoBenchConfig } from './bench-auto.js';
import { runsBuilt } from './bench-procs.js';
import { endToStartLine, gapsLine } from './slots-gaps.js';

const env = process.env;
const num = (name: string, dflt: number) => (env[name] !== undefined && env[name] !== '' ? Number(env[name]) : dflt);
const rows = new Set((env.BENCH_ROWS ?? (env.BENCH_AUTO === '1' ? '8' : '1,2,3,4')).split(',').map((s) => s.trim()));
if (env.BENCH_AUTO === '1') rows.add('8');
const list = (name: string, dflt: string) =>
  (env[name] || dflt)
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
const label = (c: SlotsConfig) => `${c.order} qa ${c.queueAhead}`;

const dir = mkdtempSync(join(tmpdir(), 'shardmove-bench-'));
const config: BenchConfig = {
  dir,
  inventory: {
    projects: num('BENCH_PROJECTS', 20_000),
    snippets: num('BENCH_SNIPPETS', 2_000),
    groups: num('BENCH_GROUPS', 500),
    storages: { 'nfs-1': 0.6, 'nfs-2': 0.4 },
  },
  workers: num('BENCH_WORKERS', 50),
  moveMs: num('BENCH_MOVE_MS', 20),
  failRate: num('BENCH_FAIL_RATE', 0.02),
  faultSeed: num('BENCH_FAULT_SEED', 7),
  concurrency: num('BENCH_CONCURRENCY', 1000),
  pollInterval: env.BENCH_POLL ?? '250ms',
  backoff: env.BENCH_BACKOFF ?? '250ms',
  seqItems: num('BENCH_SEQ_ITEMS', 1000),
  seqPollMs: num('BENCH_SEQ_POLL_MS', 20),
  scaleProjects: num('BENCH_SCALE_PROJECTS', 1_000_000),
  scaleKillAfterMs: num('BENCH_SCALE_KILL_S', 240) * 1000,
};

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mb = (x: number) => `${x.toFixed(0)} MB`;
const leftText = (l: Left) => `${l.projects} projects, ${l.snippets} snippets, ${l.groups} groups`;
/** The table goes to stdout line by line, so a row that fails later does not lose the ones before. */
const print = (line: string) => process.stdout.write(`${line}\n`);
const row = (label: string, value: string, note = '') =>
  print(`  ${label.padEnd(34)} ${value.padEnd(24)} ${note}`.trimEnd());
const section = (title: string) => print(title);
const inv = config.inventory;
const items = inv.projects + inv.snippets + inv.groups;

async function main(): Promise<void> {
  const say = (m: string) => process.stderr.write(`bench: ${m}\n`);
  say(
    `${items} items (${inv.projects}/${inv.snippets}/${inv.groups}), workers ${config.workers}, moves ${config.moveMs} ms, fail rate ${config.failRate}, ` +
      `concurrency ${config.concurrency}, poll ${config.pollInterval}; scratch ${dir}; ` +
      `bin/shardmove runs ${runsBuilt() ? 'the built dist/' : 'src/ through tsx (no current build: npm run build)'}`,
  );
  if (rows.has('1')) {
    say('row 1: shardmove throttled...');
    const r = await throttledRow(config);
    const moved = items - r.left.projects - r.left.snippets - r.left.groups;
    const wall = r.run.wallMs;
    const ck = r.run.checkpoint;
    section(
      `1. shardmove, throttled (concurrency ${config.concurrency}, poll ${config.pollInterval}, fail rate ${config.failRate}, retries after ${config.backoff})`,
    );
    row(
      'makespan (first to last API call)',
      s(r.apiSpanMs),
      `${(r.apiSpanMs / r.idealMs).toFixed(2)}x ideal ${s(r.idealMs)} (target <= 1.15x)`,
    );
    row('makespan (process start to exit)', s(wall), `${(wall / r.idealMs).toFixed(2)}x ideal; exit ${r.run.code}`);
    row(
      'API requests per moved item',
      (r.requests.total / Math.max(1, moved)).toFixed(3),
      `${r.requests.total} requests for ${moved} items (target <= 1.5)`,
    );
    const b = r.requests.byClass;
    row(
      '  by class',
      '',
      `POST ${b.postItem}, move lists ${b.moveList}, move GETs ${b.moveGet}, listings ${b.listing}, item GETs ${b.itemGet}, other ${b.other}`,
    );
    row('peak RSS (orchestrator)', mb(r.run.peakRssMb));
    row(
      'CPU: orchestrator / sandbox',
      `${s(r.run.cpuMs)} / ${s(r.sandboxCpuMs)}`,
      `${((r.run.cpuMs * 1000) / items).toFixed(0)} / ${((r.sandboxCpuMs * 1000) / items).toFixed(0)} µs per item; ${cpus().length} cores, load average ${loadavg()[0]?.toFixed(1)} at the end`,
    );
    // Each process runs on one core at best: the busier one bounds the makespan on this machine.
    const floor = Math.max(r.run.cpuMs, r.sandboxCpuMs);
    row(
      'CPU floor (busier process)',
      s(floor),
      `${(floor / r.idealMs).toFixed(2)}x ideal: about the best makespan on this machine`,
    );
    if (ck) {
      const perS = (n: number) => (n / (wall / 1000)).toFixed(0);
      row(
        'checkpoint writes per second',
        `${perS(ck.commits)} commits/s`,
        `${perS(ck.statements)} row writes/s (${ck.commits} transactions, ${ck.statements} rows in ${s(wall)})`,
      );
    }
    row('left on the sources', leftText(r.left));
  }
  if (rows.has('2')) {
    say('row 2: documented sequence (bench/baseline-doc.sh)...');
    const r = await baselineRow(config);
    section(`2. documented sequence, bench/baseline-doc.sh (curl + jq; same inventory, fail rate ${config.failRate})`);
    if (r.error) row('did not run', '', r.error.split('\n')[0] ?? '');
    else {
      const why =
        r.outcome === 'drained'
          ? 'projects listing empty'
          : `${r.outcome}: gave up waiting; last progress at ${s(r.lastProgressMs)}`;
      row('makespan', s(r.makespanMs), why);
      row(
        'API requests',
        String(r.requests.total),
        `script counted ${r.scriptRequests}; POST bulk ${r.requests.byClass.postBulk}, listings ${r.requests.byClass.listing}`,
      );
      row('left on the sources (never retried)', leftText(r.left));
    }
  }
  if (rows.has('3')) {
    say(`row 3: one at a time on ${config.seqItems} items...`);
    const r = await sequentialRow(config);
    section(`3. one at a time (POST, poll every ${config.seqPollMs} ms until finished, next; no failures)`);
    row(`makespan, ${r.items} items`, s(r.makespanMs), `${r.requests} requests`);
    row(
      `extrapolated to ${items} items`,
      s(r.extrapolatedMs),
      `${(r.extrapolatedMs / ((items * config.moveMs) / config.workers)).toFixed(1)}x ideal`,
    );
  }
  if (rows.has('4')) {
    say(`row 4: scale, ${config.scaleProjects} projects...`);
    const r = await scaleRow(config);
    section(
      `4. scale: ${r.projects} projects on one storage (bin/shardmove runs ${runsBuilt() ? 'the built dist/' : 'src/ through tsx'})`,
    );
    row('sandbox seeding', s(r.seedMs));
    row(
      'dry run (enumeration + checkpoint)',
      s(r.dryRun.wallMs),
      `exit ${r.dryRun.code}; target <= 40 s; load average ${r.dryLoad.toFixed(1)} at its end`,
    );
    row(
      'requests, dry run',
      String(r.dryRequests.total),
      `${((r.dryRequests.total * 100) / r.projects).toFixed(2)} per 100 items (target about 1): listings ${r.dryRequests.byClass.listing}, other ${r.dryRequests.total - r.dryRequests.byClass.listing}`,
    );
    row('peak RSS, dry run', mb(r.dryRun.peakRssMb), 'target < 250 MB');
    row(
      'real run SIGKILLed after',
      s(r.killedAfterMs),
      `${r.listed ? 'listing complete' : 'listing NOT complete (time limit)'}, moves in flight; ${r.checkpointItems} items in the checkpoint`,
    );
    row(
      'resume: spawn to first API call',
      r.resumeFirstCallMs === null ? 'none' : s(r.resumeFirstCallMs),
      `target < 1 s (sandbox-side first request); load average ${r.resumeLoad.toFixed(1)}`,
    );
    row('resume: spawn to first POST', r.resumeFirstPostMs === null ? 'none' : s(r.resumeFirstPostMs));
  }
  if (rows.has('5')) {
    const speeds = (env.BENCH_SLOTS_SPEEDS ?? env.BENCH_SLOTS_SPEED ?? '20,5').split(',').map(Number);
    const orders = list('BENCH_SLOTS_ORDERS', 'by-kind,together').map((o) => {
      if (o !== 'by-kind' && o !== 'together')
        throw new Error(`BENCH_SLOTS_ORDERS: "${o}" is not a move.order; use by-kind, together or both`);
      return o;
    });
    const queueAheads = list('BENCH_SLOTS_QUEUE_AHEAD', '0,2,auto').map((q): number | 'auto' => {
      if (q === 'auto') return q;
      if (!/^\d+$/.test(q))
        throw new Error(`BENCH_SLOTS_QUEUE_AHEAD: "${q}" is not a queue_ahead; use integers or auto`);
      return Number(q);
    });
    // `auto` is the one schedule's; the old order is measured at the fixed depths it had.
    const configs: SlotsConfig[] = orders.flatMap((order) =>
      queueAheads
        .filter((queueAhead) => order === 'together' || queueAhead !== 'auto')
        .map((queueAhead) => ({ order, queueAhead })),
    );
    const workers = num('BENCH_SLOTS_WORKERS', 20);
    const slotsInventory = {
      projects: num('BENCH_SLOTS_PROJECTS', 2000),
      snippets: num('BENCH_SLOTS_SNIPPETS', 1000),
      groups: num('BENCH_SLOTS_GROUPS', 400),
      storages: { 'nfs-1': 1 },
    };
    for (const speed of speeds) {
      const o = {
        inventory: slotsInventory,
        medianMb: num('BENCH_SLOTS_MEDIAN_MB', 20),
        maxMb: num('BENCH_SLOTS_MAX_MB', 20_000),
        speed,
        fixed: env.BENCH_SLOTS_FIXED === '1',
        configs,
      };
      say(
        `row 5: slots, ${slotsInventory.projects}/${slotsInventory.snippets}/${slotsInventory.groups} items on one source, sizes around ${o.medianMb} MB, speed ${speed}, ${workers} workers, ` +
          `${configs.map(label).join('; ')}...`,
      );
      const r = await slotsRow({ ...config, workers }, o);
      section(
        `5. keep the slots full: ${r.items} items (${slotsInventory.projects} projects, ${slotsInventory.snippets} snippets, ${slotsInventory.groups} group wikis) on one source, ` +
          `sizes log-normal (median ${o.medianMb} MB, max ${o.maxMb} MB), --speed ${r.speed}, ${workers} workers = cap, poll ${r.pollInterval} (5 s scaled), ` +
          `min_interval ${r.minInterval}; read from the sandbox's move records`,
      );
      const sides: [string, SlotsSide][] = [
        ['bulk (documented)', r.bulk],
        ...r.shardmove.map(({ config: c, side: x }): [string, SlotsSide] => [label(c), x]),
        ...(r.fixed ? [['fixed cadence', r.fixed] as [string, SlotsSide]] : []),
      ];
      const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(3) : 'n/a');
      // One line per side, under 80 columns: the columns, the orchestrator's CPU per move and the load.
      print(
        `  ${'side'.padEnd(20)} ${'span s'.padStart(7)} ${'/limit'.padStart(6)} ${'/bulk'.padStart(6)} ${'expo'.padStart(6)} ${'req/it'.padStart(6)} ${'µs/mv'.padStart(6)} ${'net'.padStart(5)} ${'load'.padStart(5)}`,
      );
      for (const [name, x] of sides) {
        const limit = physicalLimitMs(x.records, workers);
        print(
          `  ${name.padEnd(20)} ${(x.records.spanMs / 1000).toFixed(2).padStart(7)} ${ratio(x.records.spanMs, limit).padStart(6)} ` +
            `${ratio(x.records.spanMs, r.bulk.records.spanMs).padStart(6)} ${x.records.exposure.toFixed(3).padStart(6)} ` +
            `${(x.requests.total / Math.max(1, x.records.moved)).toFixed(2).padStart(6)} ` +
            `${((x.cpuMs * 1000) / Math.max(1, x.records.moves)).toFixed(0).padStart(6)} ` +
            `${(((x.cpuMs - (x.checkpoint?.cpuAtFirstMs ?? 0)) * 1000) / Math.max(1, x.records.moves)).toFixed(0).padStart(5)} ` +
            `${x.load.toFixed(1).padStart(5)}`,
        );
      }
      const limits = new Set(sides.map(([, x]) => s(physicalLimitMs(x.records, workers))));
      const first = r.bulk.records;
      if (limits.size === 1)
        print(
          `  limit ${[...limits][0]} = max(work ${s(first.workMs)} / ${workers} workers, longest move ${s(first.longestMs)})`,
        );
      for (const [name, x] of sides) {
        const limit = limits.size === 1 ? '' : `, limit ${s(physicalLimitMs(x.records, workers))}`;
        const per = (n: number) => (n / Math.max(1, x.records.moves)).toFixed(1);
        const ck = x.checkpoint
          ? `, start-up ${s(x.checkpoint.cpuAtFirstMs ?? 0)} of it; ${per(x.checkpoint.commits)} commits and ${per(x.checkpoint.statements)} rows written per move`
          : '';
        print(
          `  ${name.padEnd(20)} ${x.records.moved}/${x.records.moves} moved/moves, ${x.requests.total} req, ` +
            `CPU ${s(x.cpuMs)}, RSS ${mb(x.peakRssMb)}${limit}, ${x.exit}${ck}`,
        );
        const b = x.requests.byClass;
        print(
          `    requests: POST ${b.postItem + b.postBulk}, move lists ${b.moveList}, move GETs ${b.moveGet}, ` +
            `listings ${b.listing}, item GETs ${b.itemGet}, other ${b.other}`,
        );
      }
      // Where the idle worker time went (bench/slots-gaps.ts), as shares of the limit.
      for (const [name, x] of sides) if (x.gaps) print(`  ${gapsLine(name, x.gaps, workers)}`);
      for (const [name, x] of sides) if (x.lags) print(`  ${endToStartLine(name, x.lags)}`);
      print(
        `  targets: --speed 5 span/limit <= 1.03, expo <= 1.1, req/it <= 1.5;\n` +
          `           --speed 20 span/limit <= 1.10 with auto.\n` +
          `  expo: read-only time / move time; µs/mv: orchestrator CPU per move;\n` +
          `  net: the same without its start-up (CPU before its first checkpoint write)\n` +
          `  (bulk: the script's shell, curl and jq); load: 1-min load average at its end`,
      );
    }
  }
  if (rows.has('6')) {
    say('row 6: the demo (npm start), idle slots from its event log...');
    const r = await demoIdleRow(config);
    section(`6. the demo (plans/demo.yaml against its in-process sandbox, as npm start runs it)`);
    row(
      'idle share of slots',
      `${(r.share * 100).toFixed(1)}%`,
      `target < 5%; load average ${r.load.toFixed(1)} at the end`,
    );
    row(
      'idle / run',
      `${s(r.idleMs)} / ${s(r.runMs)}`,
      `exit ${r.code}; stretches over 250 ms: ${r.long.map(([a, b]) => s(b - a)).join(', ') || 'none'}`,
    );
  }
  if (rows.has('7')) {
    say('row 7: placement on two destinations...');
    const seeds = list('BENCH_PLACEMENT_SEEDS', '41').map(Number);
    const pageMs = num('BENCH_PLACEMENT_PAGE_MS', 2000);
    const r = await placementRows({ seeds, pageMs, rootsOn: env.BENCH_PLACEMENT_ROOTS_ON !== '0' });
    section(
      `7. placement on two destinations, no room declared (400 projects, 30 fork networks; listing page ${pageMs} ms)`,
    );
    for (const line of placementLines(r)) print(line);
  }
  if (rows.has('8')) {
    const sides = list('BENCH_AUTO_SIDES', 'fixed,auto,bulk').map((x) => {
      if (x !== 'fixed' && x !== 'auto' && x !== 'bulk')
        throw new Error(`BENCH_AUTO_SIDES: "${x}" is not a side; use fixed, auto and bulk`);
      return x;
    });
    const caps = list('BENCH_AUTO_CAPS', '2,4,8,16,32').map((x) => {
      if (!/^\d+$/.test(x) || Number(x) < 1)
        throw new Error(`BENCH_AUTO_CAPS: "${x}" is not a cap (a positive integer)`);
      return Number(x);
    });
    const c: AutoBenchConfig = {
      dir,
      projects: num('BENCH_AUTO_PROJECTS', 400),
      medianMb: num('BENCH_AUTO_MEDIAN_MB', 32),
      sigma: num('BENCH_AUTO_SIGMA', 1.4),
      inventorySeed: num('BENCH_AUTO_SEED', 41),
      speed: num('BENCH_AUTO_SPEED', 20),
      workers: num('BENCH_AUTO_WORKERS', 64),
      bandwidth: parseBandwidths(env.BENCH_AUTO_BW || 'nfs-1:200MiB,cluster:400MiB'),
      caps,
      sides: new Set(sides),
      tenant: parseTenant(env.BENCH_AUTO_TENANT || 'nfs-1:0.5'),
    };
    const r = await autoRow(c, say);
    for (const line of autoLines(c, r)) print(line);
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    if (!env.BENCH_KEEP) rmSync(dir, { recursive: true, force: true });
  });
