import { spawn } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { DRAIN_RUNNING } from '../errors.js';
import { claimDrain, drainRecordName, instanceKey, liveDrains, registryDir } from './drain-registry.js';
import type { LiveDrain } from './drain-registry.js';
import { thisHost } from './process.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'shardmove-drains-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const URL = 'https://root:glpat-secret-value-0001@GitLab.Example.com/?private_token=glpat-secret-value-0001';

function request(env: Record<string, string>, over: Partial<Parameters<typeof claimDrain>[0]> = {}) {
  return {
    instanceUrl: URL,
    storages: ['nfs-2', 'nfs-1'],
    plan: 'retire-nfs',
    planFile: '/plans/retire-nfs.yaml',
    checkpoint: '/plans/state/retire-nfs.db',
    env,
    ...over,
  };
}

function otherProcess(): number {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  onTestFinished(() => {
    child.kill('SIGKILL');
  });
  return child.pid!;
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((r) => child.on('exit', r));
  return child.pid!;
}

function plant(env: Record<string, string>, storage: string, o: Partial<LiveDrain>): string {
  const dir = registryDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, drainRecordName(URL, storage));
  const record: LiveDrain = {
    instance: instanceKey(URL),
    storage,
    plan: 'retire-nfs',
    planFile: '/plans/retire-nfs.yaml',
    checkpoint: '/plans/state/other.db',
    pid: 1,
    host: thisHost(),
    processStart: null,
    startedAt: '2026-01-01T00:00:00.000Z',
    claim: 'theirs',
    ...o,
  };
  writeFileSync(file, JSON.stringify(record));
  return file;
}

const thrown = (f: () => unknown): { code?: unknown; message?: string } => {
  try {
    f();
  } catch (err) {
    return err as { code?: unknown; message: string };
  }
  throw new Error('did not throw');
};

describe('the registry of drains on this host', () => {
  it('keys one instance once, however its URL names it', () => {
    const same = (urls: string[]) => {
      const keys = new Set(urls.map(instanceKey));
      const names = new Set(urls.map((u) => drainRecordName(u, 'nfs-1')));
      expect([...keys], urls.join(' ')).toHaveLength(1);
      expect(names.size).toBe(1);
    };
    // Every loopback name, a trailing dot, case, a trailing slash, the scheme.
    same([
      'http://localhost:8080',
      'http://127.0.0.1:8080',
      'http://127.1.2.3:8080/',
      'http://[::1]:8080',
      'http://[::ffff:127.0.0.1]:8080',
      'http://LOCALHOST.:8080/',
      'https://localhost:8080',
      'http://root:secret@localhost:8080/?private_token=x#y',
    ]);
    // A default port, written or not, of either scheme.
    same([
      'https://gitlab.example.com',
      'https://gitlab.example.com:443',
      'http://gitlab.example.com',
      'http://gitlab.example.com:80/',
      'http://GitLab.Example.com.:443',
    ]);
    same(['https://h.example/gitlab', 'http://h.example:443/gitlab/']);
    expect(instanceKey('http://[::1]:8080')).toBe('localhost:8080');
  });

  it('refuses a second drain that names the same instance another way', () => {
    const env = { XDG_RUNTIME_DIR: tempDir() };
    const first = claimDrain(request(env, { instanceUrl: 'http://localhost:8080' }));
    onTestFinished(() => first.release());
    const second = thrown(() =>
      claimDrain(request(env, { instanceUrl: 'http://[::1]:8080/', checkpoint: '/plans/state/second.db' })),
    );
    expect(second.code).toBe(DRAIN_RUNNING);
    expect(second.message).toContain('another run drains nfs-1 of http://[::1]:8080 on this host');
  });

  it('keeps instances apart that differ in host, non-default port or path', () => {
    const keys = [
      'http://localhost:8080',
      'http://localhost:8081',
      'http://localhost',
      'http://gitlab.example.com:8080',
      'https://gitlab.example.com',
      'https://gitlab.example.com/gitlab',
      'https://gitlab2.example.com',
      'http://10.0.0.1:8080',
    ].map(instanceKey);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('keys an instance without its credentials, query or case, and never shows the token', () => {
    expect(instanceKey(URL)).toBe('gitlab.example.com');
    expect(instanceKey('https://gitlab.example.com/')).toBe('gitlab.example.com');
    expect(drainRecordName(URL, 'nfs-1')).toBe(drainRecordName('https://gitlab.example.com', 'nfs-1'));
    expect(drainRecordName(URL, 'nfs-1')).not.toBe(drainRecordName(URL, 'nfs-2'));
    const env = { XDG_RUNTIME_DIR: tempDir() };
    const claim = claimDrain(request(env));
    const dir = registryDir(env);
    const files = readdirSync(dir);
    expect(files).toHaveLength(2);
    const text = files.map((f) => f + readFileSync(join(dir, f), 'utf8')).join('\n');
    expect(text).not.toContain('glpat-secret');
    expect(text).not.toContain('root');
    claim.release();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a second run of the same storages under another checkpoint, naming the live one', () => {
    const env = { XDG_RUNTIME_DIR: tempDir() };
    const pid = otherProcess();
    plant(env, 'nfs-2', { pid, checkpoint: '/plans/state/first.db', startedAt: '2026-12-02T05:00:00.000Z' });
    const err = thrown(() => claimDrain(request(env)));
    expect(err.code).toBe(DRAIN_RUNNING);
    expect(err.message).toContain(`pid ${pid}`);
    expect(err.message).toContain('checkpoint /plans/state/first.db');
    expect(err.message).toContain('started 2026-12-02T05:00:00.000Z');
    expect(err.message).toContain('drains nfs-2 of https://gitlab.example.com');
    expect(err.message).toContain('shardmove control /plans/retire-nfs.yaml --state /plans/state/first.db --stop');
    // nfs-1 (claimed first, in sorted order) was let go again: nothing of this run is left.
    expect(readdirSync(registryDir(env))).toEqual([drainRecordName(URL, 'nfs-2')]);
  });

  it('refuses an overlapping plan: one storage in common is enough', () => {
    const env = { XDG_RUNTIME_DIR: tempDir() };
    const first = claimDrain(request(env, { storages: ['nfs-1'], checkpoint: '/a.db' }));
    const err = thrown(() => claimDrain(request(env, { storages: ['nfs-1', 'nfs-3'], checkpoint: '/b.db' })));
    expect(err.code).toBe(DRAIN_RUNNING);
    // Another instance, or another storage, is another drain.
    claimDrain(request(env, { instanceUrl: 'https://other.example.com', storages: ['nfs-1'], checkpoint: '/c.db' }));
    claimDrain(request(env, { storages: ['nfs-3'], checkpoint: '/d.db' }));
    first.release();
  });

  it('lets a run of the same checkpoint replace the record (its lock decided) and takes over a dead pid', async () => {
    const env = { XDG_RUNTIME_DIR: tempDir() };
    plant(env, 'nfs-1', { pid: otherProcess(), checkpoint: '/plans/state/retire-nfs.db' });
    plant(env, 'nfs-2', { pid: await deadPid(), checkpoint: '/plans/state/gone.db' });
    const taken: string[] = [];
    const claim = claimDrain(request(env, { onTakeover: (s) => taken.push(s.checkpoint) }));
    expect(taken.sort()).toEqual(['/plans/state/gone.db', '/plans/state/retire-nfs.db']);
    expect(liveDrains({ instanceUrl: URL, storages: ['nfs-1'], env, checkpoint: '/x.db' })).toHaveLength(1);
    expect(
      liveDrains({ instanceUrl: URL, storages: ['nfs-1'], env, checkpoint: '/plans/state/retire-nfs.db' }),
    ).toEqual([]);
    claim.release();
    expect(liveDrains({ instanceUrl: URL, storages: ['nfs-1', 'nfs-2'], env, checkpoint: '/x.db' })).toEqual([]);
  });

  it('of two runs claiming at once, exactly one gets the storage', () => {
    const env = { XDG_RUNTIME_DIR: tempDir() };
    const results = [0, 1, 2, 3].map((i) => {
      try {
        return claimDrain(request(env, { checkpoint: `/c${i}.db` }));
      } catch {
        return null;
      }
    });
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });

  it('does not use a registry folder others can write or plant, and says why', () => {
    const base = tempDir();
    mkdirSync(join(base, 'shardmove'));
    chmodSync(join(base, 'shardmove'), 0o777);
    const errors: string[] = [];
    const claim = claimDrain(request({ XDG_RUNTIME_DIR: base }, { onError: (e) => errors.push((e as Error).message) }));
    claim.release();
    expect(errors.join()).toMatch(/can be written by others/);
    const planted = tempDir();
    symlinkSync(tempDir(), join(planted, 'shardmove'));
    const errs2: string[] = [];
    claimDrain(request({ XDG_RUNTIME_DIR: planted }, { onError: (e) => errs2.push((e as Error).message) }));
    expect(errs2.join()).toMatch(/not a directory/);
  });

  it('falls back to a folder of its own under the temporary directory', () => {
    const t = tempDir();
    const dir = registryDir({ TMPDIR: t });
    expect(dir).toBe(join(t, `shardmove-${process.getuid!()}`, 'drains'));
    claimDrain(request({ TMPDIR: t })).release();
    expect(readdirSync(join(t, `shardmove-${process.getuid!()}`))).toEqual(['drains']);
  });
});
