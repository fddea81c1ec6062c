/**
 * `shardmove validate` as an operator runs it: a real CLI process, the environment for ${VAR}s,
 * exit codes and the file:line:col lines on stderr.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../bin/shardmove');
const TOKEN = 'glpat-sandbox-root-api-sudo-0001';
const dir = mkdtempSync(join(tmpdir(), 'shardmove-validate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const { PATH, HOME } = process.env;
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: dir, env: { PATH, HOME, ...env }, timeout: 20_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

const GOOD = `version: 1
name: retire-nfs
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1, nfs-2]
  to: cluster
  mode: bulk
`;

describe('shardmove validate', () => {
  const env = { GITLAB_URL: 'http://127.0.0.1:9', GITLAB_TOKEN: TOKEN };

  it('a good plan: exit 0, "plan OK", warnings on stdout', async () => {
    writeFileSync(join(dir, 'good.yaml'), GOOD);
    const r = await cli(['validate', 'good.yaml'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^plan OK: retire-nfs\n/);
    expect(r.stdout).toContain('good.yaml:9:9: warning: move.mode: bulk');
  });

  it('the repository plans validate with the environment they document', async () => {
    const example = await cli(['validate', resolve(import.meta.dirname, '../plans/example.yaml')], env);
    const demo = await cli(['validate', resolve(import.meta.dirname, '../plans/demo.yaml')], {
      SHARDMOVE_URL: 'http://127.0.0.1:9',
      SHARDMOVE_TOKEN: TOKEN,
    });
    expect([example.code, example.stdout.split('\n')[0]]).toEqual([0, 'plan OK: retire-nfs']);
    expect([demo.code, demo.stdout.split('\n')[0]]).toEqual([0, 'plan OK: demo']);
  });

  it('a literal token: exit 2 with file:line:col, and the token is not repeated', async () => {
    writeFileSync(join(dir, 'literal.yaml'), GOOD.replace('${GITLAB_TOKEN}', TOKEN));
    const r = await cli(['validate', 'literal.yaml'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^literal\.yaml:5:10: instance\.token: a literal secret is not allowed/m);
    expect(r.stdout + r.stderr).not.toContain('sandbox-root-api');
  });

  it('a bad field and a missing variable: exit 2, every problem with file:line:col', async () => {
    writeFileSync(join(dir, 'bad.yaml'), GOOD.replace('  mode: bulk\n', '  concurency: 5\npoll: { interval: 5 }\n'));
    const r = await cli(['validate', 'bad.yaml'], { GITLAB_TOKEN: TOKEN });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe('shardmove: invalid plan bad.yaml (3 problems):');
    expect(lines.slice(1)).toEqual([
      'bad.yaml:4:8: instance.url: environment variable GITLAB_URL is not set',
      'bad.yaml:9:3: move.concurency: unknown field "concurency" (did you mean "concurrency"?)',
      'bad.yaml:10:19: poll.interval: a bare number is ambiguous; write a unit, e.g. "5s" or "5ms"',
    ]);
  });

  it('--version and -V print the version from package.json and exit 0', async () => {
    const { version } = JSON.parse(readFileSync(resolve(import.meta.dirname, '../package.json'), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-V']) {
      const r = await cli([flag]);
      expect([r.code, r.stdout.trim(), r.stderr]).toEqual([0, version, '']);
    }
  });

  it('a missing plan file: exit 2', async () => {
    const r = await cli(['validate', 'nope.yaml'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('nope.yaml:1:1: no such file');
  });
});
