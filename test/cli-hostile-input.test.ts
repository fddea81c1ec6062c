/**
 * The hostile probe's input through the real CLI: hostile plans and seeds are invalid input (exit 2,
 * one line `file:line:col: message`), answered at once instead of after minutes, a stack overflow or
 * an internal error. A process that does not finish is killed (SIGKILL: the CLI handles the first
 * SIGTERM itself); no test measures time.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../bin/shardmove');
const dir = mkdtempSync(join(tmpdir(), 'shardmove-hostile-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((done) => {
    const { PATH, HOME } = process.env;
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: dir, env: { PATH, HOME }, timeout: 20_000, killSignal: 'SIGKILL' },
      (err, _stdout, stderr) => {
        done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr });
      },
    );
  });
}

describe('hostile input through the CLI', () => {
  it('validate: a 1 MB plan of nested brackets exits 2 at the first level too deep', async () => {
    // Before: 582 s and 1.19 GB, then "Maximum call stack size exceeded".
    writeFileSync(join(dir, 'nested.yaml'), `a: ${'['.repeat(500_000)}`);
    const { code, stderr } = await cli(['validate', 'nested.yaml']);
    expect(code).toBe(2);
    expect(stderr).toContain(
      'nested.yaml:1:35: YAML nested deeper than 32 levels (mappings and lists inside each other); a plan needs 3',
    );
  });

  it("status: a plan that does not load and has 100,000 keys exits 2 with the loader's problem", async () => {
    // Before: 1 min 48 s in the fallback that looks for the plan's name.
    writeFileSync(
      join(dir, 'keys.yaml'),
      `name: x\n${Array.from({ length: 100_000 }, (_, i) => `k${i}: 1\n`).join('')}`,
    );
    const { code, stderr } = await cli(['status', 'keys.yaml']);
    expect(code).toBe(2);
    expect(stderr).toContain('keys.yaml:7143:8: more than 50000 YAML tokens');
  });

  it('validate: a plan that is not UTF-8 exits 2 at the first bad byte', async () => {
    writeFileSync(
      join(dir, 'latin1.yaml'),
      Buffer.concat([Buffer.from('version: 1\nname: caf'), Buffer.from([0xe9]), Buffer.from('\n')]),
    );
    const { code, stderr } = await cli(['validate', 'latin1.yaml']);
    expect(code).toBe(2);
    expect(stderr).toContain('latin1.yaml:2:10: not UTF-8 (byte 0xe9 at offset 20); save the plan as UTF-8');
  });

  it('sandbox: a seed with a "billion laughs" exits 2 at its first alias', async () => {
    // Before: yaml's ReferenceError, an internal error (exit 1).
    const lol = ['lol: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
    for (const [prev, name] of ['ab', 'bc', 'cd', 'de', 'ef', 'fg', 'gh', 'hi'])
      lol.push(`${name}${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    const seed = readFileSync(resolve(import.meta.dirname, '../plans/sandbox.yaml'), 'utf8').replace(
      /^inventory:\n/m,
      `inventory:\n  x:\n${lol.map((l) => `    ${l}\n`).join('')}`,
    );
    writeFileSync(join(dir, 'bomb.yaml'), seed);
    const line = seed.slice(0, seed.indexOf('*a')).split('\n').length;
    const { code, stderr } = await cli(['sandbox', '--seed', 'bomb.yaml']);
    expect(code).toBe(2);
    expect(stderr).toContain(`bomb.yaml:${line}:13: the aliases (*name) from here on expand too far`);
  });
});
