/**
 * Two runs' metrics files in one node_exporter textfile folder, scraped by a real node_exporter and a
 * real Prometheus, as on a host where more than one plan runs: a partial drain that ended (it kept
 * items on its source, as planned) and a second plan that runs, then ends with a quarantined item.
 *
 * node_exporter gathers both files without an error (every series carries its plan), Prometheus tells
 * the plans apart, the finished run shows no live-looking series (no remaining items, ETA or poll
 * growing old), and the alert rules of docs/operations.md, run verbatim, say nothing about a run that
 * ended as planned and name the run that ended with work left. The numbers are judged against the
 * sandbox's own records.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { ROOT, runCli, sandboxEnv, tempDir } from './support/cli-harness.js';
import { queriesIn } from './support/doc-promql.js';
import type { Sample } from './support/prometheus.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';
import { sandboxProjects } from './support/projects-plan.js';

const skip = prometheusSkipReason();
if (skip) console.warn(`prometheus-two-runs.test.ts: skipped: ${skip}`);

/** 20 projects of 10 MiB on nfs-1, 12 on nfs-2; project 25 (on nfs-2) never moves. */
function seed(): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {
    projects: Array.from({ length: 32 }, (_, i) => ({
      id: i + 1,
      storage: i < 20 ? 'nfs-1' : 'nfs-2',
      size_mb: 10,
    })),
  };
  return s;
}
const BROKEN = 25;

function writeDrainPlan(dir: string, name: string, from: string, moveLines: string[] = []): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'version: 1',
      `name: ${name}`,
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      `  from: [${from}]`,
      '  to: cluster',
      ...moveLines,
      '  kinds: [projects]',
      '  concurrency: 4',
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      '',
    ].join('\n'),
  );
  return file;
}

const plansOf = (s: Sample[]) => s.map((x) => x.labels.plan).sort();

describe('two runs on one host, scraped by a real node_exporter and Prometheus', { timeout: 180_000 }, () => {
  it.skipIf(skip !== null)(
    'gathers both files, tells the plans apart, and alerts on neither finished run as planned',
    async () => {
      const dir = tempDir('prom-two-runs');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const textfileDir = join(dir, 'textfile');
      mkdirSync(textfileDir, { recursive: true });
      const stack = await startPrometheusStack({ textfileDir, scrapeIntervalMs: 500 });
      onTestFinished(() => stack.stop());
      const sandbox = await startSandbox({
        seed: seed(),
        workers: 4,
        moveDurationMs: 600,
        faults: { brokenItems: [`project:${BROKEN}`] },
      });
      onTestFinished(() => sandbox.close());
      const alerts = queriesIn(join(ROOT, 'docs', 'operations.md'), ROOT).filter((q) => q.kind === 'alert');
      expect(alerts.map((a) => a.name)).toEqual([
        'ShardmoveRunGone',
        'ShardmoveNoPoll',
        'ShardmovePaused',
        'ShardmoveEndedWithWork',
      ]);

      // The first run: a partial drain of nfs-1 that stops after 50 MiB and ends done.
      const partial = await runCli(
        [
          'run',
          writeDrainPlan(dir, 'partial', 'nfs-1', ['  until: {moved: 50MiB}']),
          '--metrics-file',
          join(textfileDir, 'shardmove-partial.prom'),
        ],
        { cwd: dir, env: sandboxEnv(sandbox.url) },
      );
      expect(partial.code, partial.stdout + partial.stderr).toBe(0);
      const kept = sandboxProjects(sandbox).filter((p) => p.storage === 'nfs-1').length;
      expect(kept).toBeGreaterThan(0);

      // The second run, while Prometheus watches both files.
      let exitedAt: number | null = null;
      const second = runCli(
        ['run', writeDrainPlan(dir, 'nfs2', 'nfs-2'), '--metrics-file', join(textfileDir, 'shardmove-nfs2.prom')],
        {
          cwd: dir,
          env: sandboxEnv(sandbox.url),
          onStart: (child) => {
            child.once('exit', () => (exitedAt = Date.now()));
            onTestFinished(() => void child.kill('SIGKILL'));
          },
        },
      );
      await stack.waitFor('shardmove_items_remaining{plan="nfs2"} > 0', (s) => s.length === 1, 60_000);
      await stack.waitFor('shardmove_heartbeat_timestamp_seconds{plan="nfs2"}', (s) => s.length === 1, 60_000);
      expect(exitedAt, 'Prometheus answered only after the second run had ended').toBeNull();
      // Both plans, told apart; the finished one says how it ended and has nothing live left.
      expect(plansOf(await stack.samples('shardmove_run_info'))).toEqual(['nfs2', 'partial']);
      const ended = await stack.samples('shardmove_run_end_timestamp_seconds');
      expect(ended.map((s) => [s.labels.plan, s.labels.outcome])).toEqual([['partial', 'done']]);
      for (const live of [
        'shardmove_items_remaining',
        'shardmove_eta_seconds',
        'shardmove_last_successful_poll_timestamp_seconds',
        'shardmove_heartbeat_timestamp_seconds',
      ])
        expect(plansOf(await stack.samples(live)), live).toEqual(['nfs2']);
      // The alerts, verbatim: nothing about the finished run.
      for (const a of alerts)
        expect(
          (await stack.samples(a.query)).filter((s) => s.labels.plan === 'partial'),
          `${a.name}: ${a.query}`,
        ).toEqual([]);

      const r = await second;
      expect(r.code, r.stdout + r.stderr).toBe(3);
      const end = exitedAt as unknown as number;
      await stack.waitFor(
        'timestamp(shardmove_run_info{plan="nfs2"})',
        (s) => s.length === 1 && s[0]!.value * 1000 > end,
        30_000,
      );
      // Both ended: only the alert for work left names a run, the one with the quarantined project.
      for (const a of alerts) {
        const fired = (await stack.samples(a.query)).map((s) => [s.labels.plan, s.labels.outcome]);
        expect(fired, `${a.name}: ${a.query}`).toEqual(
          a.name === 'ShardmoveEndedWithWork' ? [['nfs2', 'done_with_quarantine']] : [],
        );
      }
      // node_exporter gathered every scrape without an error, and read both files.
      expect(
        (await stack.samples('promhttp_metric_handler_errors_total{job="node", cause="gathering"}')).map(
          (s) => s.value,
        ),
      ).toEqual([0]);
      expect((await stack.samples('max_over_time(node_textfile_scrape_error[10m])')).map((s) => s.value)).toEqual([0]);
      expect((await stack.samples('count(node_textfile_mtime_seconds)')).map((s) => s.value)).toEqual([2]);

      // Against the sandbox's own records: what each plan's items say is where the projects are.
      const projects = sandboxProjects(sandbox);
      const movedOff = (from: (id: number) => boolean) =>
        projects.filter((p) => from(p.id) && p.storage === 'cluster').length;
      const items = async (plan: string, state: string) =>
        (await stack.samples(`sum(shardmove_items{plan="${plan}", state="${state}"})`))[0]?.value;
      expect(await items('partial', 'moved')).toBe(movedOff((id) => id <= 20));
      expect(20 - movedOff((id) => id <= 20)).toBe(kept);
      expect(await items('nfs2', 'moved')).toBe(movedOff((id) => id > 20));
      expect(await items('nfs2', 'quarantined')).toBe(1);
      expect(projects.find((p) => p.id === BROKEN)?.storage).toBe('nfs-2');
    },
  );
});
