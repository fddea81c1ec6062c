// Room and load: the sandbox tells the same story about room and load. Storages have a seeded
// capacity; its node_exporter (GET /-/sandbox/node-exporter/metrics) serves node_filesystem_* for
// each storage's filesystem and the disks' busy time, which follow the moves; a move into a storage
// without room fails as Gitaly's replication does.
import { startManualSandbox } from './support/manual-sandbox.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { FaultOptions } from '../src/sandbox/faults.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';
import { realTimersAt } from './support/fake-clock.js';

const MIB = 1024 * 1024;
const MOVE_MS = 1000;
/** 90% of a move is its copy (moves/policy.ts COPY_SHARE). */
const COPY_MS = 900;
const NO_SPACE =
  '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2.';

/** nfs-1 holds three projects (40, 30 and 80 MiB); nfs-2 and cluster are nearly empty; default has no capacity. */
function seed(change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  s.instance.storage_capacity = { 'nfs-1': 1024 * MIB, 'nfs-2': 10 * 1024 * MIB, cluster: 60 * MIB };
  // Every storage on a disk of its own, at the default mountpoints (/var/opt/gitlab/git-data/<storage>).
  delete s.instance.storage_filesystems;
  s.inventory = {
    projects: [
      { id: 1, storage: 'nfs-1', size_mb: 40 },
      { id: 2, storage: 'nfs-1', size_mb: 30 },
      { id: 3, storage: 'nfs-1', size_mb: 80 },
      { id: 4, storage: 'default', size_mb: 5 },
    ],
    snippets: [{ id: 1, storage: 'nfs-2', size_mb: 2 }],
  };
  change(s);
  return s;
}

/** A sandbox on a manual clock (test/support/manual-sandbox.ts), closed after the test. */
const startManual = (s: Seed = seed(), faults: Partial<FaultOptions> = {}) => startManualSandbox(s, MOVE_MS, faults);

async function scrape(sb: RunningSandbox) {
  const res = await fetch(`${sb.url}/-/sandbox/node-exporter/metrics`);
  const text = await res.text();
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    text,
    families: res.status === 200 ? parsePrometheusTextFormat(text) : [],
  };
}

const MOUNTPOINT = (storage: string) => `/var/opt/gitlab/git-data/${storage}`;
/** The default disks, in the order of the seed's storages (default, nfs-1, nfs-2, cluster). */
const DISK: Record<string, string> = { default: 'sdb', 'nfs-1': 'sdc', 'nfs-2': 'sdd', cluster: 'sde' };

/** The value of `name` for `storage`'s filesystem or disk, as a number (undefined when the series is absent). */
async function gauge(sb: RunningSandbox, name: string, storage: string): Promise<number | undefined> {
  const { families } = await scrape(sb);
  const v = families
    .find((f) => f.name === name)
    ?.metrics.find((m) => m.labels?.mountpoint === MOUNTPOINT(storage) || m.labels?.device === DISK[storage])?.value;
  return v === undefined ? undefined : Number(v);
}

const avail = (sb: RunningSandbox, storage: string) => gauge(sb, 'node_filesystem_avail_bytes', storage);
const ioSeconds = (sb: RunningSandbox, storage: string) => gauge(sb, 'node_disk_io_time_seconds_total', storage);

async function move(sb: RunningSandbox, project: number, destination: string) {
  const r = await callSandbox(sb, 'POST', `/projects/${project}/repository_storage_moves`, {
    destination_storage_name: destination,
  });
  expect(r.status).toBe(201);
  return r.body.id as number;
}
const moveState = async (sb: RunningSandbox, id: number) =>
  (await callSandbox(sb, 'GET', `/project_repository_storage_moves/${id}`)).body;
const item = async (sb: RunningSandbox, id: number) =>
  (await (
    await fetch(`${sb.url}/-/sandbox/items/project/${id}`, {
      headers: { 'private-token': 'glpat-sandbox-root-api-sudo-0001' },
    })
  ).json()) as Record<string, unknown>;

describe("the sandbox's node_exporter", () => {
  it('serves what node_exporter does: every filesystem series by device, fstype and mountpoint, and the disks', async () => {
    const { sb } = await startManual();
    const { status, contentType, families } = await scrape(sb);
    expect(status).toBe(200);
    expect(contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(families.map((f) => [f.name, f.type])).toEqual([
      ['node_disk_io_time_seconds_total', 'COUNTER'],
      ['node_disk_read_bytes_total', 'COUNTER'],
      ['node_disk_written_bytes_total', 'COUNTER'],
      ['node_filesystem_avail_bytes', 'GAUGE'],
      ['node_filesystem_device_error', 'GAUGE'],
      ['node_filesystem_files', 'GAUGE'],
      ['node_filesystem_files_free', 'GAUGE'],
      ['node_filesystem_free_bytes', 'GAUGE'],
      ['node_filesystem_readonly', 'GAUGE'],
      ['node_filesystem_size_bytes', 'GAUGE'],
    ]);
    const size = families.find((f) => f.name === 'node_filesystem_size_bytes')!.metrics;
    // No storage label: node_exporter knows filesystems, not GitLab's storages.
    expect(size).toEqual([
      { labels: { device: '/dev/sdc', fstype: 'xfs', mountpoint: MOUNTPOINT('nfs-1') }, value: String(1024 * MIB) },
      {
        labels: { device: '/dev/sdd', fstype: 'xfs', mountpoint: MOUNTPOINT('nfs-2') },
        value: String(10 * 1024 * MIB),
      },
      { labels: { device: '/dev/sde', fstype: 'xfs', mountpoint: MOUNTPOINT('cluster') }, value: String(60 * MIB) },
    ]);
    // A storage without a capacity has no filesystem figures, but a disk like every storage.
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 150) * MIB);
    expect(await gauge(sb, 'node_filesystem_free_bytes', 'nfs-1')).toBe((1024 - 150) * MIB);
    expect(await gauge(sb, 'node_filesystem_files', 'nfs-1')).toBe((1024 * MIB) / 16384);
    expect(await gauge(sb, 'node_filesystem_files_free', 'nfs-1')).toBe(((1024 - 150) * MIB) / 16384);
    expect(await avail(sb, 'nfs-2')).toBe((10 * 1024 - 2) * MIB);
    expect(await avail(sb, 'cluster')).toBe(60 * MIB);
    expect(await avail(sb, 'default')).toBeUndefined();
    expect(families[0]!.metrics.map((m) => [m.labels?.device, m.value])).toEqual([
      ['sdb', '0'],
      ['sdc', '0'],
      ['sdd', '0'],
      ['sde', '0'],
    ]);
  });

  it("answers only the monitoring allowlist, as GitLab's /-/metrics does", async () => {
    const { sb } = await startManual(
      seed((s) => {
        s.instance.monitoring_allowlist = ['10.0.0.0/8'];
      }),
    );
    const off = await scrape(sb);
    expect(off.status).toBe(404);
    expect(off.contentType).toContain('text/html');
  });
});

describe('room as moves run', () => {
  it('takes room on the destination while copying, and frees the source only when the move ends', async () => {
    const { sb, advance } = await startManual();
    const id = await move(sb, 1, 'nfs-2');
    await advance(10);
    expect((await moveState(sb, id)).state).toBe('started');
    await advance(COPY_MS / 2);
    const halfway = (await avail(sb, 'nfs-2'))!;
    expect(halfway).toBeLessThan((10 * 1024 - 2) * MIB);
    expect(halfway).toBeGreaterThan((10 * 1024 - 2 - 40) * MIB);
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 150) * MIB);
    await advance(COPY_MS / 2);
    // Replicated: the project lives on nfs-2, its old copy is still being removed from nfs-1.
    expect((await moveState(sb, id)).state).toBe('replicated');
    expect(await avail(sb, 'nfs-2')).toBe((10 * 1024 - 42) * MIB);
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 150) * MIB);
    await advance(MOVE_MS - COPY_MS);
    expect((await moveState(sb, id)).state).toBe('finished');
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 110) * MIB);
    expect(await avail(sb, 'nfs-2')).toBe((10 * 1024 - 42) * MIB);
  });

  it('keeps counting a source copy a move left behind', async () => {
    const { sb, advance } = await startManual(seed(), { failAfterSwitchRate: 1 });
    const id = await move(sb, 2, 'nfs-2');
    await advance(10);
    await advance(MOVE_MS);
    expect(await moveState(sb, id)).toMatchObject({ state: 'failed', error_message: null });
    expect(await item(sb, 2)).toMatchObject({ storage: 'nfs-2', stale_copies: ['nfs-1'] });
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 150) * MIB);
    expect(await avail(sb, 'nfs-2')).toBe((10 * 1024 - 32) * MIB);
  });

  it('counts disk time on both storages while moves run, a quarter of a second per second per move, and stops', async () => {
    const { sb, advance } = await startManual();
    await move(sb, 1, 'nfs-2');
    await move(sb, 2, 'cluster');
    // Both started when they were scheduled; 410 ms later:
    await advance(10);
    await advance(400);
    // Both moves read nfs-1 (2 of the 4 moves that saturate a disk); each writes one destination.
    expect(await ioSeconds(sb, 'nfs-1')).toBeCloseTo(0.41 * 0.5, 6);
    expect(await ioSeconds(sb, 'nfs-2')).toBeCloseTo(0.41 * 0.25, 6);
    expect(await ioSeconds(sb, 'cluster')).toBeCloseTo(0.41 * 0.25, 6);
    expect(await ioSeconds(sb, 'default')).toBe(0);
    await advance(MOVE_MS);
    await advance(MOVE_MS);
    // Both ended MOVE_MS after they started: the counters stop there.
    const after = [await ioSeconds(sb, 'nfs-1'), await ioSeconds(sb, 'nfs-2')];
    expect(after[0]).toBeCloseTo((MOVE_MS / 1000) * 0.5, 6);
    expect(after[1]).toBeCloseTo((MOVE_MS / 1000) * 0.25, 6);
    await advance(MOVE_MS);
    expect([await ioSeconds(sb, 'nfs-1'), await ioSeconds(sb, 'nfs-2')]).toEqual(after);
  });
});

describe('a move into a storage without room (Gitaly ReplicateRepository)', () => {
  it("fails at replication with Gitaly's tar error; the item stays on its source, writable, and the partial copy goes", async () => {
    const { sb, advance } = await startManual();
    const before = await item(sb, 3);
    const id = await move(sb, 3, 'cluster');
    await advance(10);
    expect((await moveState(sb, id)).state).toBe('started');
    // It copies until the 60 MiB disk is full, then fails.
    await advance(1);
    expect(await avail(sb, 'cluster')).toBeLessThan(60 * MIB);
    await advance(COPY_MS);
    expect(await moveState(sb, id)).toMatchObject({ state: 'failed', error_message: NO_SPACE });
    expect(await item(sb, 3)).toMatchObject({
      storage: 'nfs-1',
      read_only: false,
      stale_copies: [],
      checksum: before.checksum,
    });
    expect(await avail(sb, 'cluster')).toBe(60 * MIB);
    expect(await avail(sb, 'nfs-1')).toBe((1024 - 150) * MIB);
    // Writable again: a move elsewhere is accepted and succeeds.
    const again = await move(sb, 3, 'nfs-2');
    await advance(10);
    await advance(MOVE_MS);
    expect((await moveState(sb, again)).state).toBe('finished');
  });

  it('lets the first of two moves that fit only alone take the room; the second fails', async () => {
    const { sb, advance } = await startManual();
    const first = await move(sb, 1, 'cluster');
    const second = await move(sb, 2, 'cluster');
    await advance(10);
    await advance(MOVE_MS);
    expect((await moveState(sb, first)).state).toBe('finished');
    expect(await moveState(sb, second)).toMatchObject({ state: 'failed', error_message: NO_SPACE });
    expect(await avail(sb, 'cluster')).toBe(20 * MIB);
    expect((await item(sb, 2)).storage).toBe('nfs-1');
  });

  it('keeps the outcome and the room across a restart of the sandbox', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardmove-room-'));
    try {
      let now = Date.parse('2026-06-01T00:00:00Z');
      const clock = realTimersAt(() => now);
      const open = async () => {
        const sb = await startSandbox({ seed: seed(), db: join(dir, 'sandbox.db'), moveDurationMs: MOVE_MS, clock });
        onTestFinished(() => sb.close());
        return sb;
      };
      const settle = async (sb: RunningSandbox, ms: number) => {
        now += ms;
        sb.state.engine.kick();
        for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      };
      let sb = await open();
      const full = await move(sb, 3, 'cluster');
      const fits = await move(sb, 1, 'nfs-2');
      await settle(sb, 10);
      await settle(sb, COPY_MS / 2);
      const halfway = await avail(sb, 'nfs-2');
      await sb.close();
      sb = await open();
      expect(await avail(sb, 'nfs-2')).toBe(halfway);
      await settle(sb, MOVE_MS);
      expect(await moveState(sb, full)).toMatchObject({ state: 'failed', error_message: NO_SPACE });
      expect((await moveState(sb, fits)).state).toBe('finished');
      expect(await avail(sb, 'nfs-2')).toBe((10 * 1024 - 42) * MIB);
      expect(await avail(sb, 'nfs-1')).toBe((1024 - 110) * MIB);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never fails a move for room on a storage without a capacity', async () => {
    const { sb, advance } = await startManual();
    const id = await move(sb, 3, 'default');
    await advance(10);
    await advance(MOVE_MS);
    expect((await moveState(sb, id)).state).toBe('finished');
  });
});

describe('the storage_capacity seed field', () => {
  const problems = async (text: string): Promise<string[]> => {
    const { parseSeed, SeedError } = await import('../src/sandbox/seed.js');
    try {
      parseSeed(text, 'seed.yaml');
      return [];
    } catch (err) {
      if (err instanceof SeedError) return err.problems;
      throw err;
    }
  };

  it('names unknown storages and refuses what is not a byte count', async () => {
    expect(await problems('instance:\n  storages: [default]\n  storage_capacity: { default: 10, nfs-9: 5 }\n')).toEqual(
      ['seed.yaml:3:43: instance.storage_capacity.nfs-9: unknown storage "nfs-9"'],
    );
    expect(await problems('instance:\n  storages: [default]\n  storage_capacity: { default: 1.5 }\n')).toEqual([
      'seed.yaml:3:32: instance.storage_capacity.default: must be an integer >= 0',
    ]);
  });
});
