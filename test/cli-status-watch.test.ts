/**
 * `status --watch`, as separate processes: in a pipe one block per interval, each after a header
 * line; with --json one JSON document per line; a checkpoint not there yet is waited for; Ctrl-C
 * (SIGINT) ends it with exit 0 and every block whole. Blocks are counted, never timed: the test
 * waits until N have arrived, then interrupts.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, seededSandboxProcess, tempDir, writePlan } from './support/cli-harness.js';

const HEADER = /^=== shardmove status at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC ===$/;

/** Runs `args` and sends SIGINT once stdout holds `enough` of what `count` counts. */
function watchUntil(args: string[], cwd: string, count: (out: string) => number, enough: number) {
  let interrupted = false;
  return runCli(args, {
    cwd,
    onStart: (child: ChildProcess) => {
      let out = '';
      child.stdout?.on('data', (c) => {
        out += String(c);
        if (!interrupted && count(out) >= enough) {
          interrupted = true;
          child.kill('SIGINT');
        }
      });
    },
  });
}

const headers = (out: string) => out.split('\n').filter((l) => HEADER.test(l)).length;
const jsonLines = (out: string) => out.split('\n').filter((l) => l.endsWith('}')).length;

describe('status --watch (separate processes)', { timeout: 60_000 }, () => {
  it('in a pipe: one whole block per interval until SIGINT, exit 0; --json gives one document per line', async () => {
    const { dir, env } = await seededSandboxProcess('watch', { projects: 3, snippets: 0, groups: 0 });
    const plan = writePlan(dir);
    const dry = await runCli(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(dry.code, dry.stderr).toBe(0);

    const text = await watchUntil(['status', plan, '--watch', '--interval', '1s'], dir, headers, 3);
    expect(text.code, text.stderr).toBe(0);
    // Only the dry run has a checkpoint: said once, not at every block.
    expect(text.stderr.match(/showing its dry run's checkpoint/g)).toHaveLength(1);
    // Every block whole: each starts with its header and holds the full status (counted per block).
    const blocks = text.stdout.split(/^(?==== shardmove status at )/m);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const once = await runCli(['status', plan], { cwd: dir });
    for (const b of blocks) {
      const [head, ...rest] = b.split('\n');
      expect(head).toMatch(HEADER);
      expect(rest.join('\n').split('\n').length).toBe(once.stdout.split('\n').length);
    }

    const json = await watchUntil(['status', plan, '--watch', '--json', '--interval', '1s'], dir, jsonLines, 3);
    expect(json.code, json.stderr).toBe(0);
    const lines = json.stdout.split('\n').filter((l) => l !== '');
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const l of lines) expect(JSON.parse(l)).toMatchObject({ state: 'done' });
  });

  it('waits for a checkpoint that is not there yet, saying so', async () => {
    const dir = tempDir('watch-none');
    mkdirSync(join(dir, 'p'));
    const plan = writePlan(join(dir, 'p'));
    const text = await watchUntil(['status', plan, '--watch', '--interval', '1s'], dir, headers, 2);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stderr).toContain('no checkpoint yet at');
    expect(text.stdout).toContain('waiting for a run to make it');
    const json = await watchUntil(['status', plan, '--watch', '--json', '--interval', '1s'], dir, jsonLines, 2);
    expect(json.code, json.stderr).toBe(0);
    for (const l of json.stdout.split('\n').filter((x) => x !== ''))
      expect(JSON.parse(l)).toMatchObject({ state: 'no checkpoint' });
  });

  it('refuses a bad --interval, a too short one, and --interval without --watch (exit 2)', async () => {
    const dir = tempDir('watch-args');
    const plan = writePlan(dir);
    const bad = await runCli(['status', plan, '--watch', '--interval', 'soon'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--interval "soon": not a duration/);
    const bare = await runCli(['status', plan, '--watch', '--interval', '5'], { cwd: dir });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/--interval "5": a bare number is ambiguous/);
    const short = await runCli(['status', plan, '--watch', '--interval', '200ms'], { cwd: dir });
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/too short; the shortest is 1s/);
    const alone = await runCli(['status', plan, '--interval', '5s'], { cwd: dir });
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--interval is how often --watch redraws: add --watch/);
  });
});
