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

const FULL = `version: 1
name: full
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1]
  to: [g2, g3]
retry:
  pause_after: { failures: 20, within: 15m }
geo: { resync: true }
prometheus:
  url: http://127.0.0.1:9090
throttle:
  rules:
    - { name: gitaly-cpu, query: 'avg(rate(node_cpu_seconds_total[5m]))', above: 0.8, action: pause, for: 2m }
capacity:
  storages: { g2: { free: 4TiB }, g3: { free: 'node_filesystem_avail_bytes{mountpoint="/srv"}' } }
notify:
  - { webhook: { url: 'https://hooks.example.com/services/T000/B000' }, on: [run.finished] }
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

  it('the summary names every section the plan sets, a webhook by its origin only', async () => {
    writeFileSync(join(dir, 'full.yaml'), FULL);
    const shown = await cli(['validate', 'full.yaml'], env);
    expect([shown.code, shown.stderr]).toEqual([0, '']);
    // Wrapped for an 80-column terminal; the words are those of --json's lines, one section a line.
    const { lines } = JSON.parse((await cli(['validate', '--json', 'full.yaml'], env)).stdout) as { lines: string[] };
    for (const line of shown.stdout.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
    const squash = (t: string) => t.replace(/\s+/g, ' ').trim();
    expect(squash(shown.stdout)).toContain(squash(['plan OK: full', ...lines].join(' ')));
    const r = { stdout: lines.join('\n') };
    expect(r.stdout).toContain('breaker: 20 failed moves within 15m pause the run');
    expect(r.stdout).toContain(
      'rule gitaly-cpu: pause while avg(rate(node_cpu_seconds_total[5m])) is above 0.8 for 2m',
    );
    expect(r.stdout).toContain('prometheus: http://127.0.0.1:9090 (on error: pause)');
    expect(r.stdout).toContain(
      'capacity: g2 4.0 TiB free; g3 free from PromQL node_filesystem_avail_bytes{mountpoint="/srv"}',
    );
    expect(r.stdout).toContain('notify[0]: json webhook to https://hooks.example.com on run.finished');
    expect(r.stdout).toContain('verify: on; geo resync: on');
    expect(r.stdout).not.toContain('/T000/B000');
  });

  it('--json: one document with the summary, exit 0; an invalid plan: its diagnostics with line and column, exit 2', async () => {
    writeFileSync(join(dir, 'full.yaml'), FULL);
    const ok = await cli(['validate', '--json', 'full.yaml'], env);
    expect([ok.code, ok.stderr]).toEqual([0, '']);
    const doc = JSON.parse(ok.stdout) as Record<string, unknown> & { summary: Record<string, unknown> };
    expect(doc).toMatchObject({ valid: true, plan: 'full', errorCount: 0, file: join(dir, 'full.yaml') });
    expect(doc.summary).toMatchObject({
      move: { from: ['nfs-1'], to: ['g2', 'g3'] },
      throttle: { rules: [{ name: 'gitaly-cpu', above: 0.8, action: 'pause', forMs: 120_000 }] },
      capacity: {
        storages: { g2: { freeBytes: 4 * 2 ** 40 }, g3: { query: 'node_filesystem_avail_bytes{mountpoint="/srv"}' } },
      },
      notify: [{ kind: 'webhook', to: 'https://hooks.example.com', on: ['run.finished'] }],
      geo: { resync: true },
    });
    expect(ok.stdout).not.toContain(TOKEN);
    expect(ok.stdout).not.toContain('/T000/B000');

    const bad = await cli(['validate', '--json', 'full.yaml'], { GITLAB_TOKEN: TOKEN });
    expect([bad.code, bad.stderr]).toEqual([2, '']);
    expect(JSON.parse(bad.stdout)).toEqual({
      valid: false,
      file: join(dir, 'full.yaml'),
      plan: null,
      errorCount: 1,
      warningCount: 0,
      diagnostics: [
        {
          severity: 'error',
          file: 'full.yaml',
          line: 4,
          column: 8,
          path: 'instance.url',
          message: 'environment variable GITLAB_URL is not set',
          rule: null,
        },
      ],
    });

    const missing = await cli(['validate', '--json', 'nope.yaml'], env);
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stdout)).toMatchObject({ valid: false, diagnostics: [{ line: 1, column: 1 }] });
  });

  it('a missing plan file: exit 2', async () => {
    const r = await cli(['validate', 'nope.yaml'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('nope.yaml:1:1: no such file');
  });
});
