/**
 * Terminal escapes: text from the instance once reached the terminal raw. A project named with a
 * screen clear, an OSC window title, a bell and a carriage return is quarantined (its moves always
 * fail), so its name is printed by `run`'s final report and by `status`; neither prints a control
 * character, and neither does `report --html` (to a file, or to standard output for `-`).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli, sandboxEnv, startSandboxProcess, tempDir, writePlan, writeSeed } from './support/cli-harness.js';

const HOSTILE = 'evil\u001b[2J\u001b]0;pwned\u0007\rhidden\u009b31m\u202eabc';
// eslint-disable-next-line no-control-regex -- what must never reach the terminal
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('terminal escapes from the instance', () => {
  it(
    'run and status print a hostile project name with its control characters escaped',
    { timeout: 60_000 },
    async () => {
      const dir = tempDir('terminal');
      const seedFile = writeSeed(dir, { projects: 5, snippets: 1, groups: 1 });
      const doc = parseDocument(readFileSync(seedFile, 'utf8'));
      doc.setIn(['inventory', 'projects'], [{ id: 9001, name: HOSTILE, storage: 'nfs-1' }]);
      writeFileSync(seedFile, doc.toString());
      const sandbox = await startSandboxProcess([
        '--seed',
        seedFile,
        '--move-duration',
        '20',
        '--broken-items',
        'project:9001',
      ]);
      onTestFinished(async () => {
        await sandbox.stop();
        rmSync(dir, { recursive: true, force: true });
      });
      const plan = writePlan(dir);
      const run = await runCli(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
      expect(run.code, run.stderr).toBe(3);
      expect(run.stdout).toContain('evil\\u001b[2J\\u001b]0;pwned\\u0007\\u000dhidden\\u009b31m\\u202eabc');
      expect(run.stdout).not.toMatch(CONTROL);
      expect(run.stderr).not.toMatch(CONTROL);

      const status = await runCli(['status', plan], { cwd: dir });
      expect(status.stdout).toContain('evil\\u001b[2J');
      expect(status.stdout + status.stderr).not.toMatch(CONTROL);

      // JSON output keeps the same value: the escape is JSON's own.
      const json = await runCli(['status', plan, '--json'], { cwd: dir });
      expect(json.stdout).not.toMatch(CONTROL);
      const names = (JSON.parse(json.stdout) as { quarantined: { name: string }[] }).quarantined.map((q) => q.name);
      expect(names.some((n) => n.includes(HOSTILE))).toBe(true);

      // The HTML report shows the name as the terminal does, in its tables and in its inlined data.
      const report = await runCli(['report', plan, '--html', 'report.html'], { cwd: dir });
      expect(report.code, report.stderr).toBe(0);
      const html = readFileSync(join(dir, 'report.html'), 'utf8');
      expect(html).toContain('evil\\u001b[2J\\u001b]0;pwned\\u0007\\u000dhidden\\u009b31m\\u202eabc');
      expect(html).not.toMatch(CONTROL);
      const piped = await runCli(['report', plan, '--html', '-'], { cwd: dir });
      expect(piped.code, piped.stderr).toBe(0);
      expect(piped.stdout).toMatch(/^<!doctype html>/);
      expect(piped.stdout).toContain('evil\\u001b[2J');
      expect(piped.stdout).not.toMatch(CONTROL);
    },
  );
});
