/**
 * `run --metrics-file PATH`: a real run (CLI process) against a real sandbox process with
 * failing moves and broken items; the file is read with a Prometheus text-format parser while the
 * run goes on (every read is a whole file: the writes are atomic) and after it, and its numbers are
 * checked against the sandbox's own move records and the checkpoint.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { ParsedFamily } from 'parse-prometheus-text-format';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openCheckpoint } from '../src/store/checkpoint.js';
import {
  ADMIN_TOKEN,
  movesOf,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';

/**
 * Written at every read while the run goes (a family appears once it has a series: items once a
 * listing found some, requests once one was answered).
 */
const LIVE_FAMILIES = [
  'shardmove_moves_in_flight',
  'shardmove_concurrency_cap',
  'shardmove_paused',
  'shardmove_eta_seconds',
  'shardmove_items_remaining',
  'shardmove_heartbeat_timestamp_seconds',
  'shardmove_run_start_timestamp_seconds',
  'shardmove_migration_start_timestamp_seconds',
  'shardmove_migration_active_seconds',
  'shardmove_run_info',
];
/** The file the run leaves: what is true of a run that ended (this one left copies behind). */
const FINAL_FAMILIES = [
  'shardmove_items',
  'shardmove_copies_left_behind',
  'shardmove_run_start_timestamp_seconds',
  'shardmove_migration_start_timestamp_seconds',
  'shardmove_migration_active_seconds',
  'shardmove_run_end_timestamp_seconds',
  'shardmove_run_info',
  'shardmove_items_staying',
  'shardmove_moves_finished_total',
  'shardmove_moves_failed_total',
  'shardmove_move_duration_seconds',
  'shardmove_http_requests_total',
];

const sum = (f: ParsedFamily | undefined, where: (l: Record<string, string>) => boolean = () => true) =>
  (f?.metrics ?? []).filter((m) => where(m.labels ?? {})).reduce((a, m) => a + Number(m.value), 0);

/**
 * The parser flattens a histogram's series into one unless the histogram has no labels other than
 * `le` (it follows an old client_python parser), so each kind's series is parsed on its own (without its plan label).
 */
function histogramByKind(
  text: string,
  name: string,
): Map<string, { count: number; sum: number; buckets: Record<string, string> }> {
  const lines = text.split('\n');
  const header = lines.filter((l) => l.startsWith(`# HELP ${name} `) || l.startsWith(`# TYPE ${name} `));
  const samples = lines.filter((l) => l.startsWith(`${name}_`));
  const kinds = new Set(samples.map((l) => /kind="([^"]+)"/.exec(l)?.[1] ?? ''));
  const out = new Map<string, { count: number; sum: number; buckets: Record<string, string> }>();
  for (const kind of kinds) {
    const own = samples
      .filter((l) => l.includes(`kind="${kind}"`))
      .map((l) =>
        l
          .replace(/,?plan="[^"]*"/, '')
          .replace(/,?kind="[^"]+"/, '')
          .replace('{}', ''),
      );
    const [family] = parsePrometheusTextFormat(`${[...header, ...own].join('\n')}\n`);
    const m = family?.metrics[0];
    out.set(kind, { count: Number(m?.count), sum: Number(m?.sum), buckets: m?.buckets ?? {} });
  }
  return out;
}

describe('run --metrics-file', { timeout: 90_000 }, () => {
  it('keeps a textfile-collector file that parses at every read, and whose counts match the sandbox', async () => {
    const dir = tempDir('metrics');
    const sandbox = await startSandboxProcess([
      '--move-duration',
      '60',
      '--workers',
      '10',
      '--move-fail-rate',
      '0.15',
      '--fault-seed',
      '5',
      '--broken-items',
      'project:3,snippet:5',
      '--seed',
      writeSeed(dir, { projects: 60, snippets: 10, groups: 6 }),
    ]);
    onTestFinished(async () => {
      await sandbox.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const plan = writePlan(dir, { concurrency: 8 });
    const metricsFile = join(dir, 'textfile', 'shardmove.prom');
    // A file of the same plan left in the folder (an earlier rehearsal's): node_exporter could not
    // gather both, so the run says so. Another plan's file is no problem.
    mkdirSync(join(dir, 'textfile'));
    writeFileSync(
      join(dir, 'textfile', 'rehearsal.prom'),
      'shardmove_run_info{plan="it",step="done",dry_run="false"} 1\n',
    );
    writeFileSync(
      join(dir, 'textfile', 'other.prom'),
      'shardmove_run_info{plan="itx",step="done",dry_run="false"} 1\n',
    );

    // Read the file as often as we can while the run goes: every read must be a complete file.
    const reads: string[] = [];
    let running = true;
    const reader = (async () => {
      while (running) {
        if (existsSync(metricsFile)) reads.push(readFileSync(metricsFile, 'utf8'));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const started = Date.now() / 1000;
    const r = await runCli(['run', plan, '--metrics-file', 'textfile/shardmove.prom'], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
    });
    running = false;
    await reader;
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(
      `warning: --metrics-file: ${join(dir, 'textfile', 'rehearsal.prom')} in the same folder also has series of plan it`,
    );
    expect(r.stderr).not.toContain('other.prom');

    expect(reads.length).toBeGreaterThan(3);
    const steps = new Set<string>();
    const live = reads.filter((t) => !t.includes('shardmove_run_end_timestamp_seconds'));
    for (const text of live) {
      expect(text.endsWith('\n')).toBe(true);
      const names = parsePrometheusTextFormat(text).map((f) => f.name);
      expect(names).toEqual(expect.arrayContaining(LIVE_FAMILIES));
      steps.add(/step="([^"]*)"/.exec(text)?.[1] ?? '');
    }
    // Written during the drains, not only at the end.
    expect([...steps].some((s) => s.startsWith('drain '))).toBe(true);
    // The temporary files were renamed away; only the .prom files are left.
    expect(readdirSync(join(dir, 'textfile')).sort()).toEqual(['other.prom', 'rehearsal.prom', 'shardmove.prom']);

    const text = readFileSync(metricsFile, 'utf8');
    const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
    expect([...families.keys()].sort()).toEqual([...FINAL_FAMILIES].sort());
    for (const [name, f] of families) {
      expect(name).toMatch(/^shardmove_[a-z0-9_]+$/);
      expect(f.help.length).toBeGreaterThan(10);
      if (f.type === 'COUNTER') expect(name).toMatch(/_total$/);
      else expect(name).not.toMatch(/_total$/);
    }
    // Every series names the plan.
    for (const line of text.split('\n').filter((l) => l.startsWith('shardmove_'))) expect(line).toContain('plan="it"');
    expect(families.get('shardmove_move_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(families.get('shardmove_run_info')?.metrics[0]?.labels).toEqual({
      plan: 'it',
      step: 'doneWithQuarantine',
      dry_run: 'false',
    });
    // The run ended, with quarantined items; nothing in the file looks like a run still going.
    const end = families.get('shardmove_run_end_timestamp_seconds')?.metrics;
    expect(end?.map((m) => m.labels)).toEqual([{ plan: 'it', outcome: 'done_with_quarantine' }]);
    expect(Number(end?.[0]?.value)).toBeGreaterThan(started);
    expect(Number(end?.[0]?.value)).toBeLessThanOrEqual(Date.now() / 1000);

    // Items: every one the checkpoint knows, by kind, storage and state.
    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    const summary = store.summary(Date.now());
    store.close();
    const items = families.get('shardmove_items');
    expect(sum(items)).toBe(summary.total);
    for (const c of summary.counts)
      expect(sum(items, (l) => l.kind === c.kind && l.storage === c.source && l.state === c.state)).toBe(c.n);
    expect(sum(items, (l) => l.state === 'quarantined')).toBe(2);
    // While it ran, the cap was the plan's and nothing was paused.
    const last = live.at(-1)!;
    const liveFamilies = new Map(parsePrometheusTextFormat(last).map((f) => [f.name, f]));
    expect(sum(liveFamilies.get('shardmove_concurrency_cap'))).toBe(8);
    expect(sum(liveFamilies.get('shardmove_paused'))).toBe(0);

    // Moves: the counters match the sandbox's own records of this (single-process) run.
    const sandboxMoves = [
      ...(await movesOf(sandbox.url, 'project')).map((m) => ({ ...m, kind: 'projects' })),
      ...(await movesOf(sandbox.url, 'snippet')).map((m) => ({ ...m, kind: 'snippets' })),
      ...(await movesOf(sandbox.url, 'group')).map((m) => ({ ...m, kind: 'groups' })),
    ];
    const finished = families.get('shardmove_moves_finished_total');
    const failed = families.get('shardmove_moves_failed_total');
    for (const kind of ['projects', 'snippets', 'groups']) {
      const own = sandboxMoves.filter((m) => m.kind === kind);
      expect(
        sum(finished, (l) => l.kind === kind),
        kind,
      ).toBe(own.filter((m) => m.state === 'finished' || m.state === 'cleanup failed').length);
      expect(
        sum(failed, (l) => l.kind === kind),
        kind,
      ).toBe(own.filter((m) => m.state === 'failed').length);
    }
    expect(sum(failed)).toBeGreaterThan(2);

    // Copies left behind: those the sandbox holds, by storage (moves that ended cleanup failed).
    const held = new Map<string, number>();
    for (const kind of ['project', 'snippet', 'group'] as const) {
      for (const id of new Set(sandboxMoves.filter((m) => m.kind === `${kind}s`).map((m) => m.itemId))) {
        const res = await fetch(`${sandbox.url}/-/sandbox/items/${kind}/${id}`, {
          headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN },
        });
        for (const storage of ((await res.json()) as { stale_copies: string[] }).stale_copies)
          held.set(storage, (held.get(storage) ?? 0) + 1);
      }
    }
    expect(held.size).toBeGreaterThan(0);
    const copies = families.get('shardmove_copies_left_behind');
    for (const [storage, n] of held)
      expect(
        sum(copies, (l) => l.storage === storage),
        storage,
      ).toBe(n);
    expect(sum(copies)).toBe([...held.values()].reduce((a, n) => a + n, 0));

    // Durations: one observation per ended move, sane values.
    const hist = histogramByKind(text, 'shardmove_move_duration_seconds');
    expect([...hist.keys()].sort()).toEqual(['groups', 'projects', 'snippets']);
    for (const [kind, h] of hist) {
      expect(h.count, kind).toBe(sum(finished, (l) => l.kind === kind) + sum(failed, (l) => l.kind === kind));
      expect(h.sum / h.count).toBeGreaterThan(0.02);
      expect(h.sum / h.count).toBeLessThan(30);
      expect(Number(h.buckets['+Inf'])).toBe(h.count);
    }

    // Requests by status: the POSTs that created moves, the polls; the last poll during the run.
    const requests = families.get('shardmove_http_requests_total');
    expect(sum(requests, (l) => l.method === 'POST' && l.status === '201')).toBeGreaterThanOrEqual(sandboxMoves.length);
    expect(sum(requests, (l) => l.method === 'GET' && l.status === '200')).toBeGreaterThan(10);
    const lastPoll = Math.max(
      ...live.map((t) =>
        sum(parsePrometheusTextFormat(t).find((f) => f.name === 'shardmove_last_successful_poll_timestamp_seconds')),
      ),
    );
    expect(lastPoll).toBeGreaterThan(started);
    expect(lastPoll).toBeLessThanOrEqual(Date.now() / 1000);
    expect(sum(families.get('shardmove_run_start_timestamp_seconds'))).toBeGreaterThan(started - 1);

    // A dry run of the same plan, its file beside the run's: its series are its own (it.dry-run), so
    // node_exporter can gather both, and nothing is said about the run's file.
    const dry = await runCli(['run', plan, '--dry-run', '--metrics-file', 'textfile/shardmove-dry.prom'], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
    });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).not.toContain('shardmove.prom');
    const dryText = readFileSync(join(dir, 'textfile', 'shardmove-dry.prom'), 'utf8');
    const dryLines = dryText.split('\n').filter((l) => l.startsWith('shardmove_'));
    expect(dryLines.length).toBeGreaterThan(5);
    for (const line of dryLines) expect(line).toContain('plan="it.dry-run"');
    expect(dryText).toMatch(/^shardmove_run_info\{plan="it\.dry-run",step="done",dry_run="true"\} 1$/m);
  });
});
