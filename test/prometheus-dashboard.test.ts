/**
 * docs/grafana-dashboard.json: an importable Grafana export whose every query names only
 * metrics that `run --metrics-file` exports (or node_exporter's own textfile metrics), uses every one
 * of them, parses in a real Prometheus, and answers there for a real run's metrics file. The static
 * checks run everywhere; the Prometheus part skips with a reason on a machine without the binaries.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it, onTestFinished } from 'vitest';
import { RunMetrics } from '../src/metrics/run-metrics.js';
import {
  movesOf,
  ROOT,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';

const skip = prometheusSkipReason();
if (skip) console.warn(`prometheus-dashboard.test.ts: Prometheus part skipped: ${skip}`);

interface Target {
  expr?: string;
  refId: string;
  datasource?: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Dashboard {
  __inputs: { name: string; type: string; pluginId: string }[];
  schemaVersion: number;
  uid: string;
  title: string;
  panels: Panel[];
  templating: {
    list: { name: string; type: string; query: { query: string } | string; datasource?: { uid: string } }[];
  };
}

const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as Dashboard;
const queries = dashboard.panels.flatMap((p) =>
  (p.targets ?? []).map((t) => ({ where: `${p.title} ${t.refId}`, expr: t.expr ?? '' })),
);

/**
 * node_exporter's own metrics about the textfile collector and its gather, which the dashboard may use
 * to see the files themselves (a gather error: two files with the same series).
 */
const NODE_TEXTFILE = [
  'node_textfile_mtime_seconds',
  'node_textfile_scrape_error',
  'promhttp_metric_handler_errors_total',
];

/** Series of a live run: gone from the file once the run ended (src/metrics/run-metrics.ts). */
const LIVE = new Set([
  'shardmove_items_remaining',
  'shardmove_eta_seconds',
  'shardmove_moves_in_flight',
  'shardmove_concurrency_cap',
  'shardmove_paused',
  'shardmove_held',
  'shardmove_last_successful_poll_timestamp_seconds',
  'shardmove_heartbeat_timestamp_seconds',
]);
/** Series written only when there is something to say: nothing staying on the sources leaves the family out. */
const WHEN_ANY = new Set(['shardmove_items_staying']);
/** Series written only once the run ended. */
const ENDED = new Set(['shardmove_run_end_timestamp_seconds']);

/** Grafana's variables, replaced as Grafana would for a query of the last few minutes. */
const VARIABLES: [string, string][] = [
  ['$__rate_interval', '1m'],
  ['$instance', '.+'],
  ['$plan', '.+'],
];
const substitute = (expr: string) => VARIABLES.reduce((e, [name, value]) => e.replaceAll(name, value), expr);

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'and',
  'or',
  'unless',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects: identifiers left once strings, label matchers,
 * ranges, grouping clauses and offsets are taken out, that are neither keywords nor called (a
 * function or an aggregation). Enough for a dashboard's queries; `{__name__=...}` is not handled.
 */
function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\boffset\s+-?\w+/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const before = bare[m.index - 1] ?? ' ';
    const after = bare.slice(m.index + m[0].length).trimStart()[0];
    if (/[\w.]/.test(before) || after === '(' || KEYWORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names].sort();
}

/** What the metrics file exports, from the RunMetrics registry: a histogram is its three series. */
async function exportedNames(): Promise<{ families: Map<string, string>; series: Set<string> }> {
  const json = await new RunMetrics('p').registry.getMetricsAsJSON();
  const families = new Map(json.map((m) => [m.name, String(m.type)]));
  const series = new Set<string>();
  for (const [name, type] of families) {
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) series.add(name + s);
    else series.add(name);
  }
  return { families, series };
}

describe('docs/grafana-dashboard.json', () => {
  it('finds the metric names of PromQL expressions', () => {
    expect(metricNamesIn('sum by (kind, outcome) (rate(a_total{instance=~"$i", kind!="x"}[5m]))')).toEqual(['a_total']);
    expect(metricNamesIn('histogram_quantile(0.9, sum by (le) (rate(d_bucket{le!="+Inf"}[1m])))')).toEqual([
      'd_bucket',
    ]);
    expect(metricNamesIn('time() - max(b{file=~".*by (x)\\\\.prom"} > 0)')).toEqual(['b']);
    expect(metricNamesIn('x / on (instance) group_left (plan) y offset 5m unless z and bool 1e3')).toEqual([
      'x',
      'y',
      'z',
    ]);
    expect(metricNamesIn('sum(rate(h_sum[1m])) by (kind) / sum(rate(h_count[1m])) by (kind)')).toEqual([
      'h_count',
      'h_sum',
    ]);
    expect(metricNamesIn('max_over_time(q[10m:1m]) * -Inf')).toEqual(['q']);
  });

  it('is an importable export: one Prometheus input, every panel and query on it', () => {
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }),
    ]);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dashboard.panels) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${DS_PROMETHEUS}' });
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.expr?.trim(), `${p.title} ${t.refId}`).toBeTruthy();
        expect(t.datasource ?? p.datasource, `${p.title} ${t.refId}`).toEqual({
          type: 'prometheus',
          uid: '${DS_PROMETHEUS}',
        });
      }
    }
    for (const v of dashboard.templating.list) expect(v.datasource?.uid, v.name).toBe('${DS_PROMETHEUS}');
  });

  it('names only metrics that the metrics file exports, and shows every one of them', async () => {
    const { families, series } = await exportedNames();
    const allowed = new Set([...series, ...NODE_TEXTFILE]);
    const used = new Set<string>();
    for (const q of queries) {
      const names = metricNamesIn(q.expr);
      expect(names.length, q.where).toBeGreaterThan(0);
      for (const n of names) {
        expect(allowed.has(n), `${q.where}: ${n} is not exported by the metrics file`).toBe(true);
        used.add(n);
      }
      // Every Grafana variable used is one the test knows how to replace.
      expect(substitute(q.expr), q.where).not.toContain('$');
    }
    for (const v of dashboard.templating.list) {
      const query = typeof v.query === 'string' ? v.query : v.query.query;
      const m = /^label_values\(([A-Za-z_:][\w:]*)(?:\{[^}]*\})?\s*,\s*(\w+)\)$/.exec(query);
      expect(m, `variable ${v.name}: ${query}`).not.toBeNull();
      expect(allowed.has(m![1]!), `variable ${v.name}: ${m![1]} is not exported`).toBe(true);
    }
    const shown = [...families.keys()].filter(
      (f) => used.has(f) || [...used].some((n) => n.startsWith(`${f}_`) && families.get(f) === 'histogram'),
    );
    expect(shown.sort()).toEqual([...families.keys()].sort());
  });

  it.skipIf(skip !== null)(
    'every query parses in a real Prometheus and answers for a real run: the live panels while it runs, the others after',
    { timeout: 120_000 },
    async () => {
      const dir = tempDir('prom-dashboard');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const textfileDir = join(dir, 'textfile');
      const stack = await startPrometheusStack({ textfileDir, scrapeIntervalMs: 1000 });
      onTestFinished(() => stack.stop());
      // With failing moves, so that every series (failed moves included) exists; 18 items of 1 s each
      // on 4 workers: several scrapes while it runs.
      const sandbox = await startSandboxProcess([
        '--move-duration',
        '1000',
        '--workers',
        '4',
        '--move-fail-rate',
        '0.3',
        '--fault-seed',
        '5',
        '--seed',
        writeSeed(dir, { projects: 12, snippets: 3, groups: 3 }),
      ]);
      onTestFinished(() => sandbox.stop());
      let exitedAt: number | null = null;
      const run = runCli(
        ['run', writePlan(dir, { concurrency: 4 }), '--metrics-file', join(textfileDir, 'shardmove.prom')],
        {
          cwd: dir,
          env: sandboxEnv(sandbox.url),
          onStart: (child) => {
            child.once('exit', () => (exitedAt = Date.now()));
            onTestFinished(() => void child.kill('SIGKILL'));
          },
        },
      );
      const kindOf = (expr: string): 'live' | 'ended' | 'any' => {
        const names = metricNamesIn(expr);
        if (names.every((n) => LIVE.has(n))) return 'live';
        if (names.every((n) => ENDED.has(n))) return 'ended';
        return 'any';
      };
      const live = queries.filter((q) => kindOf(q.expr) === 'live');
      expect(live.length).toBeGreaterThan(5);
      // While the run goes: every live panel shows it.
      await Promise.all(live.map((q) => stack.waitFor(substitute(q.expr), (s) => s.length > 0, 60_000)));
      expect(exitedAt, 'Prometheus answered only after the run had ended').toBeNull();

      const r = await run;
      expect([0, 3], r.stderr).toContain(r.code);
      const failed = (await Promise.all((['project', 'snippet', 'group'] as const).map((k) => movesOf(sandbox.url, k))))
        .flat()
        .filter((m) => m.state === 'failed');
      expect(failed.length, 'the sandbox failed no move: shardmove_moves_failed_total would not exist').toBeGreaterThan(
        0,
      );

      // The file the run left holds the registry's families but the live ones.
      const { families } = await exportedNames();
      const inFile = parsePrometheusTextFormat(readFileSync(join(textfileDir, 'shardmove.prom'), 'utf8')).map(
        (f) => f.name,
      );
      expect(inFile.sort()).toEqual([...families.keys()].filter((f) => !LIVE.has(f) && !WHEN_ANY.has(f)).sort());

      // Prometheus has scraped the final file.
      const ended = exitedAt as unknown as number;
      await stack.waitFor('timestamp(shardmove_run_info)', (s) => s.length === 1 && s[0]!.value * 1000 > ended, 30_000);
      for (const q of queries) {
        // Throws PrometheusQueryError (bad_data for a parse error) when Prometheus refuses it.
        await expect(stack.query(substitute(q.expr)), q.where).resolves.toBeDefined();
      }
      // Every other panel shows the ended run (a rate needs two scrapes of a series; wait for them).
      await Promise.all(
        queries
          .filter((q) => kindOf(q.expr) !== 'live' && !metricNamesIn(q.expr).some((n) => WHEN_ANY.has(n)))
          .map((q) => stack.waitFor(substitute(q.expr), (s) => s.length > 0, 30_000)),
      );
      // And the live ones nothing: a finished run is not a stalled one.
      for (const q of live) expect(await stack.samples(substitute(q.expr)), q.where).toEqual([]);
    },
  );
});
