/**
 * `shardmove sandbox --url-file FILE`: the URL it listens on, written once it is ready and removed
 * when it stops; refused (exit 2, nothing started) where no regular file can be, or over the seed.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli, startSandboxProcess, tempDir, writeSeed } from './support/cli-harness.js';

describe('sandbox --url-file', { timeout: 60_000 }, () => {
  it('holds the URL while the sandbox listens, and is gone once it stopped', async () => {
    const dir = tempDir('url-file');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'twin.url');
    const sandbox = await startSandboxProcess(['--url-file', file]);
    expect(readFileSync(file, 'utf8')).toBe(`${sandbox.url}\n`);
    expect((await fetch(`${readFileSync(file, 'utf8').trim()}/-/liveness`)).status).toBe(200);
    await sandbox.stop();
    expect(existsSync(file)).toBe(false);
  });

  it('refuses a directory, the seed, the database, - and a missing folder, printing no ready line', async () => {
    const dir = tempDir('url-file-bad');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'a-dir'));
    const seed = writeSeed(dir, { projects: 1, snippets: 0, groups: 0 });
    const asDir = await runCli(['sandbox', '--url-file', 'a-dir'], { cwd: dir });
    expect(asDir.code).toBe(2);
    expect(asDir.stderr).toMatch(/--url-file a-dir is a directory; name a file/);
    expect(asDir.stdout).toBe('');
    const overSeed = await runCli(['sandbox', '--seed', seed, '--url-file', seed], { cwd: dir });
    expect(overSeed.code).toBe(2);
    expect(overSeed.stdout).toBe('');
    expect(readFileSync(seed, 'utf8')).toMatch(/instance:/);
    const db = join(dir, 'sandbox.db');
    const overDb = await runCli(['sandbox', '--db', db, '--url-file', `${db}-wal`], { cwd: dir });
    expect(overDb.code).toBe(2);
    expect(existsSync(db)).toBe(false);
    const dash = await runCli(['sandbox', '--url-file', '-'], { cwd: dir });
    expect(dash.code).toBe(2);
    expect(dash.stderr).toMatch(/--url-file names a file; it cannot be - \(standard output\)/);
    const nowhere = await runCli(['sandbox', '--url-file', 'no-such-dir/twin.url'], { cwd: dir });
    expect(nowhere.code, nowhere.stderr).toBe(2);
    expect(nowhere.stderr).toMatch(/--url-file .*no-such-dir\/twin\.url/);
    expect(nowhere.stdout).toBe('');
  });
});
