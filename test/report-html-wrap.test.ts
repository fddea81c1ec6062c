/**
 * The HTML report's tables fit a 1280-pixel window: a report with copies left behind (hashed paths,
 * long project paths, a long "where the item lives") and fork networks with many members, opened in
 * a real browser (chromium through playwright-core), scrolls no table sideways and not the page.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildReportData } from '../src/report/html/data.js';
import { renderHtmlReport } from '../src/report/html/render.js';
import { networksView } from '../src/report/networks.js';
import { buildStatusReport } from '../src/report/status.js';
import type { StatusSummary } from '../src/store/types.js';
import { browserSkipReason, findChromium } from './support/browser.js';

const skip = browserSkipReason();
if (skip) console.warn(`report-html-wrap.test.ts: browser tests skipped: ${skip}`);

const T0 = Date.UTC(2026, 11, 2, 3, 0, 0);
const LONG = 'platform-engineering/shared-infrastructure/terraform-modules-for-the-kubernetes-clusters-of-emea';

/** A finished run with copies left behind on the source and the destination, and two networks. */
function reportHtml(): string {
  const summary: StatusSummary = {
    counts: [{ kind: 'projects', source: 'nfs-1', state: 'moved', n: 40 }],
    quarantined: [],
    movedLast10Min: 0,
    total: 40,
    stuck: [],
    orphans: Array.from({ length: 3 }, (_, i) => ({
      kind: 'projects' as const,
      id: 1_234_567 + i,
      name: `${LONG}-${i}`,
      source: 'nfs-1',
      moveId: 9_000_000 + i,
      moveState: 'cleanup failed',
    })),
  };
  const context = {
    dryRun: false,
    step: 'done',
    sources: ['nfs-1'],
    destination: 'gitaly-cluster-emea-west-1',
    destinations: ['gitaly-cluster-emea-west-1'],
    kinds: ['projects'],
    startedAt: T0,
    previousWeights: { 'nfs-1': 100 },
    newWeights: { 'nfs-1': 0, 'gitaly-cluster-emea-west-1': 100 },
    weightsWritten: true,
    warnings: [],
    error: null,
    instanceVersion: '17.5.0',
  };
  const members = Array.from({ length: 30 }, (_, i) => ({
    network: 1_234_567,
    id: 1_234_567 + i,
    name: `${LONG}-fork-${i}`,
    source: 'nfs-1',
    destination: 'gitaly-cluster-emea-west-1',
    state: 'moved' as const,
    sizeBytes: 2 ** 30,
  }));
  const networks = networksView(
    [{ id: 1_234_567, rootStorage: 'nfs-1', poolBytes: 2 ** 34, bytes: 2 ** 40 }],
    members,
    { destination: context.destination, memberList: true },
  );
  const status = buildStatusReport(
    '/var/lib/shardmove/state/retire-nfs.db',
    { planName: 'retire-nfs', planHash: 'h', machineVersion: 1, snapshot: { status: 'done', value: 'done', context } },
    summary,
    T0 + 3_600_000,
    { lock: null, planConcurrency: 10, networks },
  );
  const data = buildReportData({ status, context: context as never, events: [], now: T0 + 3_600_000 });
  return renderHtmlReport(data);
}

describe.skipIf(skip !== null)('the HTML report at 1280 pixels', () => {
  it('wraps every table, the copies and the fork networks included', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardmove-wrap-'));
    const browser = await chromium.launch({ executablePath: findChromium()! });
    onTestFinished(async () => {
      await browser.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const file = join(dir, 'report.html');
    writeFileSync(file, reportHtml());
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(pathToFileURL(file).href);
    // Evaluated in the page (a string: this file is compiled without the DOM's types).
    const measured = (await page.evaluate(`({
      page: { scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth },
      tables: [...document.querySelectorAll('table')].map((t) => ({
        id: t.id,
        width: t.getBoundingClientRect().width,
        room: t.parentElement.clientWidth,
      })),
    })`)) as { page: { scroll: number; client: number }; tables: { id: string; width: number; room: number }[] };
    const ids = measured.tables.map((t) => t.id);
    expect(ids).toContain('orphans');
    expect(ids).toContain('networks');
    expect(measured.page.scroll).toBeLessThanOrEqual(measured.page.client);
    for (const t of measured.tables) expect(t.width, t.id).toBeLessThanOrEqual(t.room + 0.5);
  });
});
