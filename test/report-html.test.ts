/**
 * `shardmove report --html`: a real run against the in-process sandbox (failing moves,
 * two broken items, a cap lowered, a pause and an unpause from a second connection), a report taken
 * while the run is paused and one after it, opened in a real browser (Debian's chromium through
 * playwright-core): the charts exist and hold the run's data, the tables have the checkpoint's
 * counts, nothing is fetched over the network, and the page prints.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReportData } from '../src/cli/report.js';
import type { ReportData } from '../src/report/html/data.js';
import { escapeHtml, renderHtmlReport } from '../src/report/html/render.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { browserSkipReason, findChromium } from './support/browser.js';
import { ROOT, runCli, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { steeredRun } from './support/steered-run.js';

const skip = browserSkipReason();
if (skip) console.warn(`report-html.test.ts: browser tests skipped: ${skip}`);

let dir: string;
let state: string;
let plan: string;
let live: ReportData | undefined;
let final: ReportData;
let exitState: string;

beforeAll(async () => {
  dir = tempDir('report');
  state = join(dir, 'state', 'it.db');
  mkdirSync(join(dir, 'state'));
  plan = writePlan(dir, { concurrency: 8 });
  const outcome = await steeredRun({
    planFile: plan,
    statePath: state,
    cwd: dir,
    seed: writeSeed(dir, { projects: 80, snippets: 12, groups: 6 }),
    workers: 10,
    moveDurationMs: 60,
    faults: { moveFailRate: 0.1, seed: 3, brokenItems: ['project:3', 'snippet:5'] },
    capAt: 20,
    lowCap: 3,
    pauseAt: 40,
    pauseMs: 1200,
    whilePaused: () => {
      live = readReportData(state, Date.now(), 8);
    },
  });
  exitState = outcome.kind === 'final' ? outcome.state : outcome.kind;
  final = readReportData(state, Date.now(), 8);
}, 90_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the report data of a steered run', () => {
  it('was taken live while the run was paused, and again after its end', () => {
    expect(exitState).toBe('doneWithQuarantine');
    expect(live?.outcome.state).toBe('running');
    expect(live?.control.paused).toBe(true);
    expect(final.outcome.state).toBe('doneWithQuarantine');
    expect(final.outcome.headline).toMatch(/^Done with quarantined items/);
  });

  it("agrees with the checkpoint: counts, quarantine with GitLab's error_message, moves and control changes", () => {
    const store = openCheckpoint(state, { readOnly: true });
    const summary = store.summary(Date.now());
    const events = store.readEvents(0, 1_000_000);
    store.close();
    expect(final.kinds.reduce((a, k) => a + k.total, 0)).toBe(summary.total);
    expect(final.storages.reduce((a, s) => a + s.total, 0)).toBe(summary.total);
    expect(final.quarantined.map((q) => `${q.kind}:${q.id}`).sort()).toEqual(['projects:3', 'snippets:5']);
    for (const q of final.quarantined) expect(q.reason).toMatch(/Failed to verify .* repository checksum/);
    for (const q of final.quarantined) expect(q).toMatchObject({ class: 'checksum', doc: 'docs/failures.md#checksum' });
    const count = (type: string) => events.filter((e) => e.type === type).length;
    const k = final.kinds;
    expect(k.reduce((a, r) => a + r.movesFinished, 0)).toBe(count('move.finished') + count('move.cleanup_failed'));
    expect(k.reduce((a, r) => a + r.movesFailed, 0)).toBe(count('move.failed') + count('move.stuck'));
    expect(k.reduce((a, r) => a + r.retries, 0)).toBe(count('item.retry'));
    const histogram = Object.values(final.durations.byKind)
      .flat()
      .reduce((a, n) => a + n, 0);
    expect(histogram).toBe(k.reduce((a, r) => a + r.movesFinished + r.movesFailed, 0));
    const marks = final.timeline.markers.map((m) => m.label);
    expect(marks).toEqual(
      expect.arrayContaining(['cap 3', 'paused', 'unpaused', "cap back to the plan's", 'run started', 'verify']),
    );
    // The timeline shows the pause and the lowered cap where they were in force.
    expect(final.timeline.points.some((p) => p.paused)).toBe(true);
    expect(final.timeline.points.some((p) => p.cap === 3)).toBe(true);
    expect(Math.max(...final.timeline.points.map((p) => p.inFlight))).toBeGreaterThan(3);
    expect(final.verification.result?.ok).toBe(true);
    expect(final.weights.after).toMatchObject({ cluster: 100, 'nfs-1': 0 });
  });
});

describe.skipIf(skip !== null)('the HTML report in chromium', () => {
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];
  const problems: string[] = [];
  let html: string;

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: findChromium()! });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
    });
    html = join(dir, 'report.html');
    writeFileSync(html, renderHtmlReport(final));
    await page.goto(pathToFileURL(html).href);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('loads nothing over the network and runs without errors', () => {
    expect(problems).toEqual([]);
    expect(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:'))).toEqual([]);
  });

  it("draws the timeline with the run's data points, the cap, the pause and the control changes", async () => {
    const t = await page.evaluate(() => {
      const chart = (
        globalThis as unknown as {
          Chart: {
            getChart(id: string):
              | {
                  data: { datasets: { label: string; data: { x: number; y: number | null; label?: string }[] }[] };
                  getDatasetMeta(i: number): { data: unknown[] };
                }
              | undefined;
          };
        }
      ).Chart.getChart('timeline');
      if (!chart) return null;
      return chart.data.datasets.map((d, i) => ({
        label: d.label,
        points: d.data.filter((p) => p.y !== null).length,
        drawn: chart.getDatasetMeta(i).data.length,
        max: Math.max(0, ...d.data.map((p) => p.y ?? 0)),
        labels: d.data.map((p) => p.label).filter(Boolean),
      }));
    });
    expect(t).not.toBeNull();
    const by = new Map(t!.map((d) => [d.label, d]));
    expect(by.get('moves in flight')?.points).toBe(final.timeline.points.length);
    expect(by.get('moves in flight')?.drawn).toBe(final.timeline.points.length);
    expect(by.get('moves in flight')?.max).toBeGreaterThan(3);
    expect(by.get('finished per minute')?.max).toBeGreaterThan(0);
    // The cap is unknown until the first drain records it (pre-flight may outlast a few buckets on a
    // loaded machine): every bucket from then on has it, and the chart draws each of them.
    const caps = final.timeline.points.map((p) => p.cap);
    const known = caps.findIndex((c) => c !== null);
    expect(known).toBeGreaterThanOrEqual(0);
    expect(caps.slice(known).every((c) => c !== null)).toBe(true);
    expect(by.get('cap in force')?.points).toBe(caps.length - known);
    expect(by.get('paused')?.points).toBeGreaterThan(0);
    expect(by.get('pause and cap changes')?.labels).toEqual(['cap 3', 'paused', 'unpaused', "cap back to the plan's"]);
  });

  it('draws a duration histogram per kind holding every timed move', async () => {
    const h = await page.evaluate(() => {
      const chart = (
        globalThis as unknown as {
          Chart: {
            getChart(
              id: string,
            ): { data: { labels: string[]; datasets: { label: string; data: number[] }[] } } | undefined;
          };
        }
      ).Chart.getChart('durations');
      return chart
        ? {
            labels: chart.data.labels.length,
            sets: chart.data.datasets.map((d) => ({ label: d.label, n: d.data.reduce((a, b) => a + b, 0) })),
          }
        : null;
    });
    expect(h?.labels).toBe(final.durations.bins.length);
    expect(h?.sets.map((s) => s.label).sort()).toEqual(['groups', 'projects', 'snippets']);
    for (const s of h!.sets) {
      const row = final.kinds.find((k) => k.kind === s.label)!;
      expect(s.n, s.label).toBe(row.movesFinished + row.movesFailed);
    }
  });

  it("has tables with the checkpoint's counts", async () => {
    const rows = (id: string) => page.locator(`#${id} tbody tr`).count();
    expect(await rows('kinds')).toBe(3);
    expect(await rows('storages')).toBe(3);
    expect(await rows('quarantined')).toBe(2);
    expect(await rows('markers')).toBe(final.timeline.markers.length);
    expect(await rows('weights')).toBe(4);
    const cell = async (table: string, row: string, col: number) =>
      (await page.locator(`#${table} tbody tr`).filter({ hasText: row }).locator('td').nth(col).textContent())?.trim();
    for (const k of final.kinds) expect(await cell('kinds', k.kind, 1)).toBe(String(k.total));
    expect(await page.locator('#quarantined').textContent()).toContain('Failed to verify project repository checksum');
    expect(await cell('quarantined', 'projects', 6)).toBe('checksum');
    expect(await page.locator('#headline').textContent()).toMatch(/^Done with quarantined items/);
    expect(await page.locator('#verification-result').textContent()).toMatch(/^Passed/);
  });

  it('takes a screenshot and prints to PDF', async () => {
    const png = join(dir, 'report.png');
    await page.screenshot({ path: png, fullPage: true });
    expect(statSync(png).size).toBeGreaterThan(50_000);
    await page.emulateMedia({ media: 'print' });
    const pdf = await page.pdf({ format: 'A4' });
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.length).toBeGreaterThan(50_000);
  });
});

describe('shardmove report (CLI)', () => {
  it('prints the JSON, writes the HTML, and names what is missing', async () => {
    const r = await runCli(['report', plan, '--json', '--html', 'out.html'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const data = JSON.parse(r.stdout) as ReportData;
    expect(data.outcome.state).toBe('doneWithQuarantine');
    expect(data.quarantined).toHaveLength(2);
    expect(statSync(join(dir, 'out.html')).size).toBeGreaterThan(200_000);
    expect(r.stderr).toContain('report written to');

    // The weights hints name the plan as the report was asked for it, not a PLAN placeholder.
    const html = readFileSync(join(dir, 'out.html'), 'utf8');
    expect(html).toContain(`<code>shardmove weights restore ${plan} --state ${state}</code>`);
    expect(html).toContain(`<code>shardmove revert ${plan} --state ${state}</code>`);
    expect(html).not.toMatch(/shardmove \w+( restore)? PLAN/);

    const none = await runCli(['report', plan, '--json', '--state', join(dir, 'nothing.db')], { cwd: dir });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no checkpoint at .*nothing\.db/);
    const bare = await runCli(['report', plan], { cwd: ROOT });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('--html FILE, --json, or both');
  }, 60_000);

  it('quotes a plan path with spaces and quotes in the printed commands, and says PLAN when it is not known', () => {
    const odd = renderHtmlReport(readReportData(state, Date.now(), 8, "my plans/it's.yaml"));
    expect(odd).toContain(escapeHtml(`shardmove weights restore 'my plans/it'\\''s.yaml' --state ${state}`));
    const unknown = renderHtmlReport(readReportData(state, Date.now(), 8));
    expect(unknown).toContain(`shardmove weights restore PLAN --state ${state}`);
  });
});
