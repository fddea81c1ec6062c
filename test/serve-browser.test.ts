/**
 * The web console in a real browser (chromium through playwright-core) on a running drain: the
 * run's moves are held by the sandbox's own clock (./support/held-sandbox.ts), so what is in flight
 * and when anything ends is built by the test, not waited for. The page shows what `status --json`
 * says, follows the run without a reload, pauses it with a confirmed click (the run says "PAUSED by
 * the console"), goes on with unpause, and shows a hostile project name as text.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
import type { Page } from 'playwright-core';
import { parseDocument } from 'yaml';
import { describe, expect, it, onTestFinished } from 'vitest';
import { browserSkipReason, findChromium } from './support/browser.js';
import { BIN, fromDb, runCli, sandboxEnv, tempDir, writePlan } from './support/cli-harness.js';
import { ended, startHeldSandbox } from './support/held-sandbox.js';
import { until } from './support/until.js';

const skip = browserSkipReason();
const HOSTILE = '<script>alert(1)</script>\u001b[2J\u202eabc';

/** `shardmove serve ...args`, and the URL its first line prints; stopped (SIGTERM) when the test ends. */
async function startServe(
  args: string[],
  cwd: string,
): Promise<{ url: string; child: ChildProcess; stderr: () => string }> {
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
  return { url, child, stderr: () => stderr };
}

/** The page's table of items per source, as numbers: `kind/source` -> counts. */
async function pageCounts(page: Page): Promise<Record<string, Record<string, number>>> {
  return (await page.evaluate(`(() => {
    const out = {};
    for (const tr of document.querySelectorAll('#counts tbody tr')) {
      const row = {};
      for (const td of tr.querySelectorAll('td[data-count]')) {
        const key = td.getAttribute('data-count');
        if (key !== 'kind' && key !== 'source') row[key] = Number(td.textContent.replace(/,/g, ''));
      }
      out[tr.getAttribute('data-kind') + '/' + tr.getAttribute('data-source')] = row;
    }
    return out;
  })()`)) as Record<string, Record<string, number>>;
}

const text = (page: Page, selector: string) => page.locator(selector).innerText();

/**
 * Waits until the text of `selector` passes `ok` (read through playwright's own world: the page's
 * policy allows no string evaluation, so `waitForFunction` with a string cannot run there).
 */
function waitText(page: Page, selector: string, ok: (t: string) => boolean): Promise<string> {
  return until(() => text(page, selector).catch(() => ''), ok, 30_000);
}

describe.skipIf(skip !== null)('shardmove serve in a real browser', () => {
  it(
    'follows a running drain without a reload, pauses and unpauses it with confirmed clicks, and shows a hostile name as text',
    { timeout: 120_000 },
    async () => {
      const dir = tempDir('serve-browser');
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const held = await startHeldSandbox(
        dir,
        { projects: 12, snippets: 0, groups: 0 },
        {
          // One project more, with a name no page may run or reorder; its moves always fail.
          seed: (file) => {
            const doc = parseDocument(readFileSync(file, 'utf8'));
            doc.setIn(['inventory', 'projects'], [{ id: 9001, name: HOSTILE, storage: 'nfs-1' }]);
            writeFileSync(file, doc.toString());
          },
          faults: { brokenItems: ['project:9001'] },
        },
      );
      const plan = writePlan(dir, { concurrency: 4, from: ['nfs-1', 'nfs-2', 'default'] });
      const db = join(dir, 'state', 'it.db');
      const run = runCli(['run', plan], { cwd: dir, env: sandboxEnv(held.url) });
      const inFlight = async () => (await held.moves()).filter((m) => !ended(m)).length;
      await until(inFlight, (n) => n >= 4, 30_000);

      const serve = await startServe([plan], dir);
      expect(serve.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{40,}$/);
      const token = serve.url.split('token=')[1] as string;
      expect(serve.stderr()).not.toContain(token);

      const browser = await chromium.launch({ executablePath: findChromium()! });
      onTestFinished(() => browser.close());
      // One context, as one browser profile: the second console below shares its cookie jar.
      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      const page = await context.newPage();
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      let navigations = 0;
      page.on('framenavigated', (f) => {
        if (f === page.mainFrame()) navigations++;
      });
      await page.goto(serve.url);
      // The token went into a cookie and out of the address bar.
      expect(page.url()).not.toContain(token);
      await waitText(page, '#headline', (t) => t.startsWith('RUNNING'));
      const doneBefore = await text(page, '[data-fact=done]');
      const loads = navigations;

      // Moves end on GitLab: the page follows, with no reload.
      held.letGo();
      await waitText(page, '[data-fact=done]', (t) => t !== '' && t !== doneBefore);
      expect(navigations).toBe(loads);

      // Pause: asked on the page first, then done; the run says who paused it.
      await page.click('[data-action=pause]');
      await page.waitForSelector('[data-confirm=pause]');
      expect(await text(page, '.confirm')).toContain('Pause this run?');
      await page.click('[data-confirm=pause]');
      await waitText(page, '#headline', (t) => t.startsWith('PAUSED by the console'));
      // The cap's timeline says why it is 0 now.
      await waitText(page, '#caps', (t) => t.includes('cap 0 (paused): paused from the console (shardmove serve)'));
      // Nothing new starts: once the moves in flight ended, none is in flight and the counts stand still.
      held.letGo();
      await until(inFlight, (n) => n === 0, 30_000);
      await waitText(page, '[data-fact=inFlight]', (t) => t === '0');
      const status = JSON.parse((await runCli(['status', plan, '--json'], { cwd: dir })).stdout) as {
        bySource: { kind: string; source: string; [k: string]: unknown }[];
        now: { full: string } | null;
      };
      expect(status.now?.full).toBe('PAUSED by the console');
      const shown = await pageCounts(page);
      for (const s of status.bySource) {
        const row = shown[`${s.kind}/${s.source}`];
        for (const key of ['total', 'done', 'inFlight', 'waiting', 'retrying', 'quarantined', 'staying'])
          expect(row?.[key], `${s.kind}/${s.source} ${key}`).toBe(s[key]);
      }
      expect(await inFlight()).toBe(0);

      // Unpause goes on, to the end.
      await page.click('[data-action=unpause]');
      await page.click('[data-confirm=unpause]');
      const result = await held.pumpUntil(run);
      // The run's own progress line (a line at each hold, in a pipe) says who paused it.
      expect(result.stdout + result.stderr).toMatch(/PAUSED by the console/);
      // The hostile project failed every move: quarantined, exit 3.
      expect(result.code, result.stderr).toBe(3);
      await waitText(page, '#headline', (t) => t.startsWith('DONE with 1 quarantined'));
      // The weights the run found and left, as the final report says them.
      expect(await waitText(page, '#weights', (t) => t.includes('Weights now:'))).toMatch(/^Weights before: /m);
      const pre = await text(page, '#status-text');
      expect(pre).toContain('<script>alert(1)</script>\\u001b[2J\\u202eabc');
      expect(await page.evaluate('document.scripts.length')).toBe(1);
      expect(dialogs).toEqual([]);

      // The console's controls are in the audit log as the console's.
      const changes = fromDb<{ data: string }>(
        db,
        "SELECT data FROM events WHERE type = 'control.changed' ORDER BY seq",
      ).map((e) => JSON.parse(e.data) as { paused: boolean; via?: string });
      expect(changes.map((c) => [c.paused, c.via])).toEqual([
        [true, 'console'],
        [false, 'console'],
      ]);

      // A second console on this machine, opened in the same browser: the first stays logged in
      // (cookies are kept per host whatever the port, so each console's has a name of its own).
      const second = await startServe([plan, '--read-only'], dir);
      const other = await context.newPage();
      await other.goto(second.url);
      await waitText(other, '#headline', (t) => t.startsWith('DONE with 1 quarantined'));
      const seen = await text(page, '#updated');
      const after = await waitText(page, '#updated', (t) => t !== seen);
      expect(after).toMatch(/^updated /);
      second.child.kill('SIGTERM');

      serve.child.kill('SIGTERM');
      const code = await new Promise((r) => serve.child.once('exit', r));
      expect(code).toBe(0);
    },
  );
});
