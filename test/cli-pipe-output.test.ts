/**
 * Output to a pipe is never cut: `status --json --items` and `report --json --items` of a few
 * thousand items (about 700 KB, ten times a pipe's buffer) read by a reader that starts late and
 * reads slowly arrive whole, as valid JSON, with the command's own exit code. Before, the process
 * exited with its writes still queued and the reader got the pipe's first 64 KiB, exit 0.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli, seededSandboxProcess } from './support/cli-harness.js';

/** Runs `shardmove ARGS | (sleep 1; slow reader) > OUT` in a real shell; the shardmove side's exit code. */
function throughSlowPipe(args: string[], cwd: string, env: Record<string, string>, out: string): Promise<number> {
  // The reader waits before its first read, then takes 4 KiB at a time with a pause between reads.
  const reader = `sleep 1; "$NODE" -e 'const fs=require("fs");const b=Buffer.alloc(4096);const o=fs.openSync(process.env.OUT,"w");(function r(){let n;try{n=fs.readSync(0,b,0,b.length,null)}catch(e){if(e.code==="EAGAIN")return setTimeout(r,2);throw e}if(n===0)return;fs.writeSync(o,b,0,n);setTimeout(r,1)})()'`;
  const script = `"$NODE" "$BIN" "$@" | (${reader}); exit "\${PIPESTATUS[0]}"`;
  const child = spawn('bash', ['-c', script, 'pipe', ...args], {
    cwd,
    env: { ...process.env, ...env, NODE: process.execPath, BIN, OUT: out },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return new Promise((done) => child.on('exit', (code) => done(code ?? -1)));
}

describe('output to a pipe', () => {
  it('status --json --items and report --json --items arrive whole through a slow reader', async () => {
    const { dir, env } = await seededSandboxProcess('pipe', { projects: 3000, snippets: 10, groups: 5 });
    const plan = join(dir, 'plan.yaml');
    writeFileSync(
      plan,
      [
        'version: 1',
        'name: pipe',
        'instance:',
        '  url: ${SHARDMOVE_URL}',
        '  token: ${SHARDMOVE_TOKEN}',
        'move:',
        '  from: [nfs-1, nfs-2]',
        '  to: cluster',
        '',
      ].join('\n'),
    );
    const dry = await runCli(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(dry.code, dry.stderr).toBe(0);
    const state = join(dir, 'state', 'pipe.dry-run.db');

    for (const command of ['status', 'report']) {
      const out = join(dir, `${command}.json`);
      const code = await throughSlowPipe([command, plan, '--json', '--items', '--state', state], dir, env, out);
      expect(code).toBe(0);
      const text = readFileSync(out, 'utf8');
      expect(text.length).toBeGreaterThan(10 * 65_536);
      const parsed = JSON.parse(text) as { items?: unknown[] };
      expect(Array.isArray(parsed.items) ? parsed.items.length : 0).toBeGreaterThan(2000);
    }
  }, 120_000);
});
