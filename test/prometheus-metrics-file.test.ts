/**
 * `run --metrics-file` as an operator sees it: a real run (CLI process) against a real
 * sandbox process writes its file into node_exporter's textfile directory, and a real Prometheus
 * scraping node_exporter every second is asked, while the run goes on and after it, what an
 * operator's dashboard would ask. The numbers are judged against the sandbox's own records.
 *
 * The run lasts several scrape intervals by construction: 24 items, each move exactly 1000 ms, 4
 * sandbox workers and a cap of 4 is at least 6 s of moving, against a 1 s scrape interval.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  movesOf,
  runCli,
  sandboxEnv,
  startSandboxProcess,
  storagesOf,
  tempDir,
  writePlan,
  writeSeed,
} from './support/cli-harness.js';
import type { Sample } from './support/prometheus.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';

const skip = prometheusSkipReason();
if (skip) console.warn(`prometheus-metrics-file.test.ts: skipped: ${skip}`);

const ITEMS = { projects: 16, snippets: 4, groups: 4 };
const TOTAL = ITEMS.projects + ITEMS.snippets + ITEMS.groups;
const CAP = 4;

/** The one value of a query that must answer exactly one series. */
const one = (s: Sample[]): number => {
  expect(s, JSON.stringify(s)).toHaveLength(1);
  return s[0]!.value;
};

describe('the metrics file, scraped by a real Prometheus', { timeout: 120_000 }, () => {
  it.skipIf(skip !== null)(
    'shows items remaining and moves in flight while the run goes, and that the run ended once it did',
    async () => {
      const dir = tempDir('prom-metrics');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const textfileDir = join(dir, 'textfile');
      // The sandbox starts while Prometheus waits for its first scrape (its cleanup is registered now,
      // so a stack that fails to start does not leave it running).
      const sandboxStart = startSandboxProcess([
        '--move-duration',
        '1000',
        '--workers',
        String(CAP),
        '--seed',
        writeSeed(dir, ITEMS),
      ]);
      sandboxStart.catch(() => undefined);
      onTestFinished(async () => (await sandboxStart.catch(() => null))?.stop());
      const stack = await startPrometheusStack({ textfileDir, scrapeIntervalMs: 1000 });
      onTestFinished(() => stack.stop());
      const sandbox = await sandboxStart;
      const plan = writePlan(dir, { concurrency: CAP });

      let exitedAt: number | null = null;
      const run = runCli(['run', plan, '--metrics-file', join(textfileDir, 'shardmove.prom')], {
        cwd: dir,
        env: sandboxEnv(sandbox.url),
        onStart: (child) => {
          child.once('exit', () => (exitedAt = Date.now()));
          // The test's end kills a run a failed assertion left behind (a no-op once it exited).
          onTestFinished(() => void child.kill('SIGKILL'));
        },
      });

      // While the run goes: Prometheus has items remaining, moves in flight and the plan's cap.
      const seen = await stack.waitFor('shardmove_items_remaining > 0', (s) => s.length === 1, 60_000);
      expect(exitedAt, 'Prometheus answered only after the run had ended').toBeNull();
      expect(seen[0]!.value).toBeLessThanOrEqual(TOTAL);
      await stack.waitFor('shardmove_moves_in_flight > 0', (s) => s.length === 1, 60_000);
      expect(exitedAt, 'Prometheus answered only after the run had ended').toBeNull();
      expect(
        one(await stack.waitFor('shardmove_concurrency_cap', (s) => s.length === 1 && s[0]!.value === CAP, 60_000)),
      ).toBe(CAP);

      const r = await run;
      expect(r.code, r.stderr).toBe(0);
      const ended = exitedAt as unknown as number;

      // After it: the first scrape taken after the exit reads the final file, which says the run
      // ended and has no series of a live run left.
      await stack.waitFor('timestamp(shardmove_run_info)', (s) => s.length === 1 && s[0]!.value * 1000 > ended, 30_000);
      expect(await stack.samples('shardmove_items_remaining')).toEqual([]);
      expect(await stack.samples('shardmove_moves_in_flight')).toEqual([]);
      expect(await stack.samples('shardmove_eta_seconds')).toEqual([]);
      const end = await stack.samples('shardmove_run_end_timestamp_seconds');
      expect(end.map((s) => [s.labels.plan, s.labels.outcome])).toEqual([['it', 'done']]);
      expect(end[0]!.value * 1000).toBeLessThanOrEqual(ended);
      expect(
        (await stack.samples('shardmove_run_info')).map((s) => [
          s.labels.plan,
          s.labels.step,
          s.labels.dry_run,
          s.value,
        ]),
      ).toEqual([['it', 'done', 'false', 1]]);

      // Over the whole run, as Prometheus kept it: never more in flight than the cap, never more remaining than the run's items.
      const maxInFlight = one(await stack.samples('max_over_time(shardmove_moves_in_flight[10m])'));
      expect(maxInFlight).toBeGreaterThan(0);
      expect(maxInFlight).toBeLessThanOrEqual(CAP);
      const maxRemaining = one(await stack.samples('max_over_time(shardmove_items_remaining[10m])'));
      expect(maxRemaining).toBeGreaterThan(0);
      expect(maxRemaining).toBeLessThanOrEqual(TOTAL);

      // Against the sandbox's own records: every item is on the destination, moved once.
      const storages = await Promise.all(
        (['projects', 'snippets', 'groups'] as const).map(
          async (k) => [k, [...(await storagesOf(sandbox.url, k)).values()]] as const,
        ),
      );
      for (const [kind, list] of storages) {
        expect(list, kind).toHaveLength(ITEMS[kind]);
        expect(new Set(list), kind).toEqual(new Set(['cluster']));
      }
      const moves = (
        await Promise.all((['project', 'snippet', 'group'] as const).map((k) => movesOf(sandbox.url, k)))
      ).flat();
      expect(moves.map((m) => m.state)).toEqual(Array(TOTAL).fill('finished'));
      expect(one(await stack.samples('sum(shardmove_items{state="moved"})'))).toBe(TOTAL);
      expect(one(await stack.samples('sum(shardmove_items)'))).toBe(TOTAL);
      for (const [kind, list] of storages) {
        expect(one(await stack.samples(`sum(shardmove_moves_finished_total{kind="${kind}"})`)), kind).toBe(list.length);
        expect(one(await stack.samples(`sum(shardmove_move_duration_seconds_count{kind="${kind}"})`)), kind).toBe(
          list.length,
        );
      }
      expect(await stack.samples('shardmove_moves_failed_total')).toEqual([]);
      expect(
        one(await stack.samples('sum(shardmove_http_requests_total{method="POST", status="201"})')),
      ).toBeGreaterThanOrEqual(moves.length);
      // node_exporter read the file without complaint at every scrape.
      expect(one(await stack.samples('max_over_time(node_textfile_scrape_error[10m])'))).toBe(0);
    },
  );
});
