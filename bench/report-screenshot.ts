/**
 * Regenerates docs/report-demo.png, the picture of the HTML report in docs/operations.md: the
 * demo's run (plans/demo.yaml on the in-process sandbox with the demo's seed, workers,
 * move time and faults) steered on the way as an operator would with `shardmove control` (cap
 * lowered to 4, a three-second pause, the plan's cap back), then `report --html`, opened in Debian's
 * chromium through playwright-core and screenshotted.
 *
 *   node --import tsx bench/report-screenshot.ts
 *
 * Not a benchmark and not a test; it lives here with the other scripts. Takes about 30 seconds.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { DEMO_FAULTS } from '../src/cli/demo.js';
import { readReportData } from '../src/cli/report.js';
import { renderHtmlReport } from '../src/report/html/render.js';
import { findChromium } from '../test/support/browser.js';
import { steeredRun } from '../test/support/steered-run.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const executablePath = findChromium();
if (!executablePath) throw new Error('no chromium binary found: apt-get install chromium, or set CHROMIUM_PATH');

const dir = mkdtempSync(join(tmpdir(), 'shardmove-report-shot-'));
try {
  const state = join(dir, 'demo.db');
  const outcome = await steeredRun({
    planFile: join(ROOT, 'plans', 'demo.yaml'),
    statePath: state,
    cwd: ROOT,
    workers: 20,
    moveDurationMs: 80,
    faults: { ...DEMO_FAULTS },
    capAt: 100,
    lowCap: 4,
    pauseAt: 170,
    pauseMs: 3000,
  });
  console.log(`run ended: ${outcome.kind === 'final' ? outcome.state : outcome.kind}`);
  const data = readReportData(state, Date.now(), 10);
  // The picture shows where the checkpoint was, not this machine's temporary directory.
  const html = renderHtmlReport({ ...data, checkpoint: 'state/demo.db' });
  const htmlFile = join(dir, 'report.html');
  writeFileSync(htmlFile, html);
  const browser = await chromium.launch({ executablePath });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 }, deviceScaleFactor: 1 });
    await page.goto(pathToFileURL(htmlFile).href);
    const shot = join(dir, 'report.png');
    await page.screenshot({ path: shot, fullPage: true });
    copyFileSync(shot, join(ROOT, 'docs', 'report-demo.png'));
  } finally {
    await browser.close();
  }
  console.log('wrote docs/report-demo.png');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
