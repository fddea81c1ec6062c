/**
 * The sandbox's exporters say what a real instance's say, under the real names and labels, and their
 * values follow what the move engine does (jobs queued and running, Gitaly's copies, disks busy),
 * checked on a manual clock against the sandbox's own move records:
 *
 * - node_exporter: the seed's filesystems (device, fstype, mountpoint; no storage label);
 * - Gitaly: ReplicateRepository in progress, queued, started and handled by gRPC code; commands;
 * - Sidekiq: jobs running by worker and queue, the concurrency;
 * - gitlab-exporter and `GET /api/v4/sidekiq/queue_metrics`: the queue's backlog and latency, in the
 *   queue the release routes the move jobs to;
 * - the `instance.storage_filesystems` seed field.
 */
import type { ParsedFamily } from 'parse-prometheus-text-format';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { FaultOptions } from '../src/sandbox/faults.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { SeedError, loadSeed, parseSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';
import { EXPORTER_PATHS, scrapeExporter } from './support/sandbox-exporters.js';
import { realTimersAt } from './support/fake-clock.js';

const MIB = 1024 * 1024;
const MOVE_MS = 1000;
/** 90% of a move is its copy (moves/policy.ts). */
const COPY_MS = 900;
const T0 = Date.parse('2026-06-01T00:00:00Z');

/** Ten 10 MiB projects on nfs-1 and two snippets on nfs-2, the built-in seed's filesystems. */
function seed(change: (s: Seed) => void = () => {}): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {
    projects: Array.from({ length: 10 }, (_, i) => ({ id: i + 1, storage: 'nfs-1', size_mb: 10 })),
    snippets: [
      { id: 1, storage: 'nfs-2', size_mb: 1 },
      { id: 2, storage: 'nfs-2', size_mb: 1 },
    ],
  };
  change(s);
  return s;
}

/** A sandbox with `workers` Sidekiq threads on a manual clock; `timed: false` times moves by size or disk. */
async function start(s: Seed = seed(), workers = 2, faults: Partial<FaultOptions> = {}, timed = true) {
  let now = T0;
  const sb = await startSandbox({
    seed: s,
    workers,
    ...(timed ? { moveDurationMs: MOVE_MS } : {}),
    clock: realTimersAt(() => now),
    faults,
  });
  onTestFinished(() => sb.close());
  const advance = async (ms: number) => {
    now += ms;
    sb.state.engine.kick();
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  return { sb, advance };
}

async function move(sb: RunningSandbox, kind: 'projects' | 'snippets', id: number, destination: string) {
  const r = await callSandbox(sb, 'POST', `/${kind}/${id}/repository_storage_moves`, {
    destination_storage_name: destination,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as number;
}

/** Series of `name` as [labels, value] pairs. */
function series(families: ParsedFamily[], name: string): [Record<string, string>, number][] {
  return (families.find((f) => f.name === name)?.metrics ?? []).map((m) => [m.labels ?? {}, Number(m.value)]);
}
const one = (families: ParsedFamily[], name: string, labels: Record<string, string> = {}) =>
  series(families, name).find(([l]) => Object.entries(labels).every(([k, v]) => l[k] === v))?.[1];

const moveStates = (sb: RunningSandbox) =>
  (sb.state.db.prepare('SELECT state, count(*) AS n FROM moves GROUP BY state').all() as { state: string; n: number }[])
    .map((r) => `${r.state}:${r.n}`)
    .sort();

describe("the built-in seed's node_exporter", () => {
  it('shows each storage by the mountpoint, device and fstype the seed gives it, and the block devices only as disks', async () => {
    const { sb } = await start();
    const node = await scrapeExporter(sb, EXPORTER_PATHS.node);
    expect(series(node, 'node_filesystem_size_bytes')).toEqual([
      [{ device: '/dev/sdb', fstype: 'xfs', mountpoint: '/var/opt/gitlab/git-data' }, 500 * 1024 * MIB],
      [{ device: 'nfs-1.example.com:/export/git', fstype: 'nfs4', mountpoint: '/mnt/nfs-1' }, 2 * 1024 * 1024 * MIB],
      [{ device: 'nfs-2.example.com:/export/git', fstype: 'nfs4', mountpoint: '/mnt/nfs-2' }, 2 * 1024 * 1024 * MIB],
      [{ device: '/dev/sdc', fstype: 'xfs', mountpoint: '/mnt/gitaly-cluster' }, 4 * 1024 * 1024 * MIB],
    ]);
    // What nfs-1 holds: its ten projects.
    expect(one(node, 'node_filesystem_avail_bytes', { mountpoint: '/mnt/nfs-1' })).toBe(
      2 * 1024 * 1024 * MIB - 100 * MIB,
    );
    for (const name of ['node_filesystem_readonly', 'node_filesystem_device_error'])
      expect(series(node, name).map(([, v]) => v)).toEqual([0, 0, 0, 0]);
    for (const name of [
      'node_disk_io_time_seconds_total',
      'node_disk_read_bytes_total',
      'node_disk_written_bytes_total',
    ])
      expect(series(node, name)).toEqual([
        [{ device: 'sdb' }, 0],
        [{ device: 'sdc' }, 0],
      ]);
    for (const family of node) for (const m of family.metrics) expect(m.labels ?? {}).not.toHaveProperty('storage');
  });
});

describe('Gitaly, Sidekiq and the queue follow the move engine', () => {
  /** Everything the exporters and the API say about the move jobs and copies, at once. */
  async function look(sb: RunningSandbox) {
    const gitaly = await scrapeExporter(sb, EXPORTER_PATHS.gitaly);
    const sidekiq = await scrapeExporter(sb, EXPORTER_PATHS.sidekiq);
    const queues = await scrapeExporter(sb, EXPORTER_PATHS.gitlabExporterSidekiq);
    const replicate = { grpc_method: 'ReplicateRepository', grpc_service: 'gitaly.RepositoryService' };
    return {
      states: moveStates(sb),
      inProgress: one(gitaly, 'gitaly_concurrency_limiting_in_progress', { ...replicate, system: 'gitaly' }),
      queuedCalls: one(gitaly, 'gitaly_concurrency_limiting_queued', { ...replicate, system: 'gitaly' }),
      commands: one(gitaly, 'gitaly_commands_running'),
      started: one(gitaly, 'grpc_server_started_total', { ...replicate, grpc_type: 'unary' }),
      handledOk: one(gitaly, 'grpc_server_handled_total', { ...replicate, grpc_type: 'unary', grpc_code: 'OK' }),
      running: one(sidekiq, 'sidekiq_running_jobs', {
        worker: 'Projects::UpdateRepositoryStorageWorker',
        queue: 'default',
        feature_category: 'gitaly',
        urgency: 'throttled',
        pid: 'sidekiq_0',
      }),
      concurrency: one(sidekiq, 'sidekiq_concurrency', { pid: 'sidekiq_0' }),
      backlog: one(queues, 'sidekiq_queue_size', { name: 'default' }),
      latency: one(queues, 'sidekiq_queue_latency_seconds', { name: 'default' }),
      api: (await callSandbox(sb, 'GET', '/sidekiq/queue_metrics')).body,
    };
  }

  it('counts the job waiting for a worker, the jobs running and their copies, and the calls as they return', async () => {
    const { sb, advance } = await start();
    for (const id of [1, 2, 3]) await move(sb, 'projects', id, 'cluster');
    await advance(0);
    // Two workers copy, the third job waits in the default queue.
    expect(await look(sb)).toEqual({
      states: ['scheduled:1', 'started:2'],
      inProgress: 2,
      queuedCalls: 0,
      commands: 2,
      started: 2,
      handledOk: 0,
      running: 2,
      concurrency: 2,
      backlog: 1,
      latency: 0,
      api: { queues: { default: { backlog: 1, latency: 0 }, mailers: { backlog: 0, latency: 0 } } },
    });
    await advance(COPY_MS + 50);
    // The copies returned; the jobs still remove the source copies, so the third still waits (950 ms).
    expect(await look(sb)).toMatchObject({
      states: ['replicated:2', 'scheduled:1'],
      inProgress: 0,
      commands: 0,
      started: 2,
      handledOk: 2,
      running: 2,
      backlog: 1,
      latency: 0.95,
      api: { queues: { default: { backlog: 1, latency: 0 } } },
    });
    await advance(MOVE_MS - COPY_MS - 50);
    // The first two ended at 1000 ms; a freed worker took the third.
    expect(await look(sb)).toMatchObject({
      states: ['finished:2', 'started:1'],
      inProgress: 1,
      started: 3,
      handledOk: 2,
      running: 1,
      backlog: 0,
      latency: 0,
      api: { queues: { default: { backlog: 0, latency: 0 } } },
    });
    await advance(MOVE_MS);
    expect(await look(sb)).toMatchObject({ states: ['finished:3'], inProgress: 0, handledOk: 3, running: 0 });
    // The destination's disk was busy with two moves for a second, then with one (a quarter each).
    const node = await scrapeExporter(sb, EXPORTER_PATHS.node);
    expect(one(node, 'node_disk_io_time_seconds_total', { device: 'sdc' })).toBeCloseTo(0.5 + 0.25, 6);
    // The three copies wrote their 10 MiB each onto it (their source, nfs-1, is an NFS mount: no disk here).
    expect(one(node, 'node_disk_written_bytes_total', { device: 'sdc' })).toBe(30 * MIB);
    expect(one(node, 'node_disk_read_bytes_total', { device: 'sdc' })).toBe(0);
  });

  it("follows the disk model where the seed gives a disk a bandwidth: its busy time, its bytes and Gitaly's calls", async () => {
    const { sb, advance } = await start(
      seed((s) => {
        s.instance.storage_bandwidth = { cluster: 10 * MIB };
      }),
      4,
      {},
      false,
    );
    for (const id of [1, 2, 3]) await move(sb, 'projects', id, 'cluster');
    await advance(0);
    const inProgress = async () =>
      one(await scrapeExporter(sb, EXPORTER_PATHS.gitaly), 'gitaly_concurrency_limiting_in_progress', {
        grpc_method: 'ReplicateRepository',
      });
    // Three 10 MiB copies share cluster's 10 MiB/s: 3 s of transfer, then 2 s of fixed part.
    await advance(1500);
    let node = await scrapeExporter(sb, EXPORTER_PATHS.node);
    expect(one(node, 'node_disk_written_bytes_total', { device: 'sdc' })).toBeCloseTo(15 * MIB, 0);
    expect(one(node, 'node_disk_io_time_seconds_total', { device: 'sdc' })).toBeCloseTo(1.5, 6);
    await advance(4999 - 1500);
    expect(await inProgress()).toBe(3);
    await advance(1);
    expect(await inProgress()).toBe(0);
    await advance(1000);
    expect(moveStates(sb)).toEqual(['finished:3']);
    node = await scrapeExporter(sb, EXPORTER_PATHS.node);
    expect(one(node, 'node_disk_io_time_seconds_total', { device: 'sdc' })).toBeCloseTo(3, 6);
    expect(one(node, 'node_disk_written_bytes_total', { device: 'sdc' })).toBeCloseTo(30 * MIB, 0);
    expect(one(node, 'node_disk_read_bytes_total', { device: 'sdc' })).toBe(0);
  });

  it("answers each failed copy with Gitaly's gRPC code, and counts no call to an unreachable storage", async () => {
    const codes = async (sb: RunningSandbox) =>
      series(await scrapeExporter(sb, EXPORTER_PATHS.gitaly), 'grpc_server_handled_total')
        .filter(([, v]) => v > 0)
        .map(([l, v]) => [l.grpc_code, v]);
    const missing = await start(seed(), 2, { moveFailures: { 'source-missing': 1 }, seed: 1 });
    await move(missing.sb, 'projects', 1, 'cluster');
    await missing.advance(0);
    await missing.advance(MOVE_MS);
    expect(await codes(missing.sb)).toEqual([['NotFound', 1]]);
    // A destination too small: tar fails on the full disk, Internal.
    const full = await start(
      seed((s) => {
        s.instance.storage_capacity = { ...s.instance.storage_capacity, cluster: 5 * MIB };
      }),
    );
    await move(full.sb, 'projects', 1, 'cluster');
    await full.advance(0);
    await full.advance(MOVE_MS);
    expect(await codes(full.sb)).toEqual([['Internal', 1]]);
    // The snippets' destination is down: the call never reaches a Gitaly.
    const down = await start(
      seed((s) => {
        s.instance.unreachable = ['nfs-1'];
      }),
    );
    await move(down.sb, 'snippets', 1, 'nfs-1');
    await down.advance(0);
    await down.advance(MOVE_MS);
    expect(moveStates(down.sb)).toEqual(['failed:1']);
    expect(await codes(down.sb)).toEqual([]);
    expect(
      one(await scrapeExporter(down.sb, EXPORTER_PATHS.gitaly), 'grpc_server_started_total', {
        grpc_method: 'ReplicateRepository',
      }),
    ).toBe(0);
  });

  it('puts the jobs in one queue per worker before 16.0, and a lost job in none', async () => {
    const { sb, advance } = await start(
      seed((s) => {
        s.instance.version = '15.11.0';
      }),
      1,
      { moveFailures: { 'stuck-queued': 1 }, seed: 1 },
    );
    await move(sb, 'projects', 1, 'cluster');
    await move(sb, 'snippets', 1, 'cluster');
    await advance(3_000);
    // Both jobs were lost (stuck-queued): the moves stay scheduled, and no queue holds them.
    expect(moveStates(sb)).toEqual(['scheduled:2']);
    expect((await callSandbox(sb, 'GET', '/sidekiq/queue_metrics')).body).toEqual({
      queues: {
        groups_update_repository_storage: { backlog: 0, latency: 0 },
        projects_update_repository_storage: { backlog: 0, latency: 0 },
        snippets_update_repository_storage: { backlog: 0, latency: 0 },
      },
    });
    const running = series(await scrapeExporter(sb, EXPORTER_PATHS.sidekiq), 'sidekiq_running_jobs');
    expect(running.map(([l]) => [l.worker, l.queue])).toEqual([
      ['Projects::UpdateRepositoryStorageWorker', 'projects_update_repository_storage'],
      ['Snippets::UpdateRepositoryStorageWorker', 'snippets_update_repository_storage'],
      ['Groups::UpdateRepositoryStorageWorker', 'groups_update_repository_storage'],
    ]);
  });

  it('answers GET /sidekiq/queue_metrics to administrators only, as authenticated_as_admin! does', async () => {
    const { sb } = await start();
    expect((await callSandbox(sb, 'GET', '/sidekiq/queue_metrics', undefined, null)).status).toBe(401);
    expect(
      (await callSandbox(sb, 'GET', '/sidekiq/queue_metrics', undefined, 'glpat-sandbox-alice-api-00000006')).status,
    ).toBe(403);
    expect((await callSandbox(sb, 'GET', '/sidekiq/queue_metrics')).status).toBe(200);
  });
});

describe('the storage_filesystems seed field', () => {
  const problems = (text: string): string[] => {
    try {
      parseSeed(text, 'seed.yaml');
      return [];
    } catch (err) {
      if (err instanceof SeedError) return err.problems;
      throw err;
    }
  };
  const seedWith = (lines: string[]) =>
    [
      'instance:',
      '  storages: [default, nfs-1, cluster]',
      '  storage_filesystems:',
      ...lines.map((l) => `    ${l}`),
      '',
    ].join('\n');

  it('refuses unknown storages, relative paths, shared filesystems and unknown fields, at their key', () => {
    expect(
      problems(
        seedWith([
          'nfs-9: { mountpoint: /mnt/x, device: /dev/sdx }',
          'nfs-1: { mountpoint: mnt/nfs-1, device: "/dev/sd b" }',
          'cluster: { mountpoint: /mnt/c, device: /dev/sdc, fstype: XFS, size: 1 }',
        ]),
      ),
    ).toEqual([
      'seed.yaml:4:12: instance.storage_filesystems.nfs-9: unknown storage "nfs-9"',
      'seed.yaml:5:26: instance.storage_filesystems.nfs-1.mountpoint: must be an absolute path such as /var/opt/gitlab/git-data',
      'seed.yaml:5:45: instance.storage_filesystems.nfs-1.device: must be a device such as /dev/sdb or nfs-1.example.com:/export/git',
      'seed.yaml:6:62: instance.storage_filesystems.cluster.fstype: must be a filesystem type such as xfs, ext4 or nfs4',
      'seed.yaml:6:67: instance.storage_filesystems.cluster.size: unknown field "size"; known fields: mountpoint, device, fstype',
    ]);
    expect(
      problems(
        seedWith([
          'nfs-1: { mountpoint: /mnt/git, device: /dev/sdb }',
          'cluster: { mountpoint: /mnt/git, device: /dev/sdd }',
        ]),
      ),
    ).toEqual([
      "seed.yaml:5:28: instance.storage_filesystems.cluster.mountpoint: /mnt/git is nfs-1's mountpoint too: each storage is its own filesystem in the sandbox",
    ]);
  });

  it('gives a storage without an entry its own disk and a mountpoint under git-data; old seeds load', async () => {
    const s = parseSeed(seedWith(['nfs-1: { mountpoint: /mnt/nfs-1, device: /dev/sdb }']), 'seed.yaml');
    const { storageFilesystems } = await import('../src/sandbox/seed-filesystems.js');
    expect(Object.fromEntries(storageFilesystems(s.instance))).toEqual({
      default: { mountpoint: '/var/opt/gitlab/git-data/default', device: '/dev/sdc', fstype: 'xfs' },
      'nfs-1': { mountpoint: '/mnt/nfs-1', device: '/dev/sdb', fstype: 'xfs' },
      cluster: { mountpoint: '/var/opt/gitlab/git-data/cluster', device: '/dev/sdd', fstype: 'xfs' },
    });
    const old = parseSeed('instance:\n  storages: [default, nfs-1]\n  storage_capacity: { nfs-1: 1024 }\n', 'old.yaml');
    expect(old.instance.storage_filesystems).toBeUndefined();
    expect([...storageFilesystems(old.instance).values()].map((f) => f.device)).toEqual(['/dev/sdb', '/dev/sdc']);
  });
});
