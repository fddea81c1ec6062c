/**
 * The web console under `move.concurrency: auto`, in a real browser (chromium through
 * playwright-core) on a running drain whose moves the sandbox's own clock holds
 * (./support/held-sandbox.ts): the page says the limiter's cap as its own, with its reason; a
 * number set with a confirmed click pins the cap (the run says control); "Auto" hands it back to
 * the limiter, which says so in its own words.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
import type { Page } from 'playwright-core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { browserSkipReason, findChromium } from './support/browser.js';
import { BIN, fromDb, runCli, sandboxEnv, tempDir, writePlan } from './support/cli-harness.js';
import { ended, startHeldSandbox } from './support/held-sandbox.js';
import { until } from './support/until.js';

const skip = browserSkipReason();

/** `shardmove serve ...args`, and the URL its first line prints; stopped (SIGTERM) when the test ends. */
async function startServe(args: string[], cwd: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c) => (stderr += String(c)));
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGTERM');
  });
  const url = await new Promise<string>((done, fail) => {
    createInterface({ input: child.stdout! }).once('line', done);
    child.once('exit', (code) => fail(new Error(`serve exited ${code}: ${stderr}`)));
  });
  return { url, child };
}

const text = (page: Page, selector: string) => page.locator(selector).innerText();
const waitText = (page: Page, selector: string, ok: (t: string) => boolean) =>
  until(() => text(page, selector).catch(() => ''), ok, 30_000);

describe.skipIf(skip !== null)('shardmove serve under move.concurrency: auto, in a real browser', () => {
  it(
    "shows the limiter's cap and reason, pins a number with a confirmed click, and hands it back with Auto",
    { timeout: 120_000 },
    async () => {
      const dir = tempDir('serve-auto');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const held = await startHeldSandbox(dir, { projects: 12, snippets: 0, groups: 0 });
      const plan = writePlan(dir, { from: ['nfs-1', 'nfs-2', 'default'] });
      writeFileSync(
        plan,
        readFileSync(plan, 'utf8').replace(/concurrency: \d+/, 'concurrency: { auto: { min: 2, max: 16 } }'),
      );
      const db = join(dir, 'state', 'it.db');
      const run = runCli(['run', plan], { cwd: dir, env: sandboxEnv(held.url) });
      const inFlight = async () => (await held.moves()).filter((m) => !ended(m)).length;
      await until(inFlight, (n) => n >= 2, 30_000);

      const serve = await startServe([plan], dir);
      const browser = await chromium.launch({ executablePath: findChromium()! });
      onTestFinished(() => browser.close());
      const page = await (await browser.newContext()).newPage();
      await page.goto(serve.url);

      // The limiter's cap is said as its own, with its reason; the box offers "auto" when left empty.
      await waitText(page, '[data-fact=cap]', (t) => t === '2, chosen by auto (starting at 2 (min 2, max 16))');
      expect(await page.getAttribute('#cap-input', 'placeholder')).toBe('auto');
      expect(await page.locator('[data-action=auto]').count()).toBe(0);
      await waitText(page, '#caps', (t) => t.includes('cap 2 (plan): auto: starting at 2 (min 2, max 16)'));

      // A number pins it, asked first.
      await page.fill('#cap-input', '6');
      await page.click('[data-action=concurrency]');
      expect(await text(page, '.confirm')).toContain('Allow 6 moves at once from now on?');
      await page.click('[data-confirm=concurrency]');
      await waitText(
        page,
        '[data-fact=cap]',
        (t) => t === '6 (set with shardmove control (the plan says auto (2 to 16)))',
      );

      // "Auto" hands it back to the limiter, asked first; the limiter says it decides again.
      await page.click('[data-action=auto]');
      expect(await text(page, '.confirm')).toContain("Hand the cap back to move.concurrency: auto's limiter?");
      await page.click('[data-confirm=concurrency]');
      await waitText(page, '[data-fact=cap]', (t) =>
        /^\d+, chosen by auto \(the limiter decides again from \d+\)$/.test(t),
      );
      expect(await page.locator('[data-action=auto]').count()).toBe(0);

      // Both controls are in the audit log as the console's.
      const changes = fromDb<{ data: string }>(
        db,
        "SELECT data FROM events WHERE type = 'control.changed' ORDER BY seq",
      ).map((e) => JSON.parse(e.data) as { concurrency: number | null; via?: string });
      expect(changes.map((c) => [c.concurrency, c.via])).toEqual([
        [6, 'console'],
        [null, 'console'],
      ]);

      const result = await held.pumpUntil(run);
      expect(result.code, result.stderr).toBe(0);
      serve.child.kill('SIGTERM');
    },
  );
});
