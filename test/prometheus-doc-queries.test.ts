/**
 * Every PromQL the operator-facing docs and example plans show (throttle rules, room queries,
 * standalone queries, and the series named in their prose and tables) runs verbatim against a real
 * Prometheus that scrapes the sandbox's exporters with the scrape configuration docs/sandbox.md
 * gives, while the sandbox moves repositories, and answers with data. The queries are read from the
 * files at test time (test/support/doc-promql.ts), so an edited doc is checked again. The alert
 * rules of the metrics file are checked against real runs' files in prometheus-two-runs.test.ts.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { ROOT, tempDir } from './support/cli-harness.js';
import type { DocQuery } from './support/doc-promql.js';
import { fencedBlocks, queriesIn } from './support/doc-promql.js';
import type { ScrapeTarget } from './support/prometheus.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';
import { callSandbox } from './support/sandbox-call.js';

const skip = prometheusSkipReason();
if (skip) console.warn(`prometheus-doc-queries.test.ts: skipped: ${skip}`);

const DOCS = ['README.md', 'docs/operations.md', 'docs/plan.md', 'docs/sandbox.md'];
const PLANS = readdirSync(join(ROOT, 'plans'))
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => `plans/${f}`);

/** The built-in seed, plus the storages the docs' partial-drain example moves into. */
function seed(): Seed {
  const s = structuredClone(loadSeed());
  s.instance.storages.push('gitaly-2', 'gitaly-3');
  s.instance.storage_capacity = { ...s.instance.storage_capacity, 'gitaly-2': 2 ** 42, 'gitaly-3': 2 ** 42 };
  s.instance.storage_filesystems = {
    ...s.instance.storage_filesystems,
    'gitaly-2': { mountpoint: '/mnt/gitaly-2', device: '/dev/sdd', fstype: 'xfs' },
    'gitaly-3': { mountpoint: '/mnt/gitaly-3', device: '/dev/sde', fstype: 'xfs' },
  };
  return s;
}

/** docs/sandbox.md's scrape configuration, pointed at `url` (the stack scrapes its own node_exporter as `node`). */
function scrapeTargetsFromDocs(url: string): ScrapeTarget[] {
  const block = fencedBlocks(readFileSync(join(ROOT, 'docs', 'sandbox.md'), 'utf8')).find(
    (b) => b.lang === 'yaml' && b.text.includes('scrape_configs:'),
  );
  expect(block, 'docs/sandbox.md has no scrape configuration').toBeDefined();
  const config = parse(block!.text) as { scrape_configs: { job_name: string; metrics_path: string }[] };
  return config.scrape_configs.map((j) => ({
    job: j.job_name === 'node' ? 'sandbox-node' : j.job_name,
    urls: [url],
    metricsPath: j.metrics_path,
  }));
}

describe("the docs' PromQL on a real Prometheus scraping the sandbox", { timeout: 180_000 }, () => {
  const queries: DocQuery[] = [...DOCS, ...PLANS]
    .flatMap((f) => queriesIn(join(ROOT, f), ROOT, { inline: DOCS.includes(f) }))
    .filter((q) => q.kind !== 'alert');

  it('finds the queries to check', () => {
    const kinds = new Set(queries.map((q) => q.kind));
    expect([...kinds].sort()).toEqual(['capacity', 'inline', 'promql', 'rule']);
    expect(queries.filter((q) => q.kind === 'rule').length).toBeGreaterThanOrEqual(4);
    // No query still names the sandbox's old, invented series or labels.
    for (const q of queries) expect(q.query, q.where).not.toMatch(/sandbox_|storage="/);
  });

  it.skipIf(skip !== null)(
    'runs each verbatim while the sandbox moves repositories, and each answers with data',
    async () => {
      const dir = tempDir('prom-doc-queries');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const sandbox = await startSandbox({ seed: seed(), workers: 4, moveDurationMs: 4_000 });
      onTestFinished(() => sandbox.close());
      // A metrics file in node_exporter's folder, for the docs' queries on the folder's files.
      mkdirSync(join(dir, 'textfile'));
      writeFileSync(join(dir, 'textfile', 'shardmove-example.prom'), 'shardmove_paused{plan="example"} 0\n');
      const stack = await startPrometheusStack({
        textfileDir: join(dir, 'textfile'),
        scrapeTargets: scrapeTargetsFromDocs(sandbox.url),
        scrapeIntervalMs: 500,
      });
      onTestFinished(() => stack.stop());
      // Load for the exporters to show: a bulk move of nfs-1's projects into cluster, four at a time.
      const bulk = await callSandbox(sandbox, 'POST', '/project_repository_storage_moves', {
        source_storage_name: 'nfs-1',
        destination_storage_name: 'cluster',
      });
      expect(bulk.status).toBe(202);
      for (const job of ['sandbox-node', 'gitaly', 'gitlab-sidekiq', 'gitlab_exporter_sidekiq'])
        await stack.waitFor(`up{job="${job}"}`, (s) => s.length === 1 && s[0]!.value === 1, 30_000);
      // Copies running and jobs waiting, as Prometheus sees them.
      await stack.waitFor('sum(gitaly_concurrency_limiting_in_progress) > 0', (s) => s.length === 1, 30_000);
      await stack.waitFor('max(sidekiq_queue_size{name="default"}) > 0', (s) => s.length === 1, 30_000);

      const empty: string[] = [];
      for (const q of queries) {
        // Throws PrometheusQueryError (bad_data for a parse error) when Prometheus refuses it.
        const answer = await stack
          .waitFor(q.query, (s) => s.length > 0 && s.every((x) => Number.isFinite(x.value)), 15_000)
          .catch(() => null);
        if (answer === null) empty.push(`${q.where} (${q.kind}${q.name ? ` ${q.name}` : ''}): ${q.query}`);
      }
      expect(empty, 'queries that answered no data').toEqual([]);
      // And the moves really are what the series showed: the sandbox's own records.
      const { n } = sandbox.state.db.prepare("SELECT count(*) AS n FROM moves WHERE state = 'started'").get() as {
        n: number;
      };
      expect(n).toBeGreaterThan(0);
    },
  );
});
