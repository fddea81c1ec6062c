// The seed's disk fields: `instance.storage_bandwidth` and `instance.disk_busy`, their accepted
// forms and the error each bad value gets, at its path and line:col.
import { describe, expect, it } from 'vitest';
import { SeedError, parseSeed } from './seed.js';
import { parseBandwidth, parseOffsetMs } from './seed-disks.js';

const MIB = 1024 ** 2;

/** A seed with two storages and `lines` added under `instance:`. */
function seedText(...lines: string[]): string {
  return [
    'instance:',
    '  storages: [default, nfs-1]',
    ...lines.map((l) => `  ${l}`),
    'users: [{ id: 1, username: root }]',
    '',
  ].join('\n');
}

function problems(text: string): string[] {
  try {
    parseSeed(text, 'seed.yaml');
  } catch (err) {
    if (err instanceof SeedError) return err.problems.map((p) => p.replace(/^seed\.yaml:/, ''));
    throw err;
  }
  return [];
}

const BANDWIDTH = 'must be bytes per second: a positive number, or a size such as 200MiB or 1.5GB';

describe('instance.storage_bandwidth', () => {
  it.each([
    ['200MiB', 200 * MIB],
    ['200MiB/s', 200 * MIB],
    ['200 MiB/s', 200 * MIB],
    ['1.5GB', 1.5e9],
    ['64KiB', 64 * 1024],
    ['800MB/s', 8e8],
    ['1000', 1000],
    [1000, 1000],
    [0.5, 0.5],
  ])('reads %j as %d bytes per second', (value, bytes) => {
    expect(parseBandwidth(value)).toBe(bytes);
  });

  it.each([-5, 0, '0MiB', 'fast', '200mib', '1e9', '-1MiB', '', null, true, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses %j',
    (value) => {
      expect(parseBandwidth(value)).toBeNull();
    },
  );

  it('keeps bytes per second by storage in the configuration', () => {
    const seed = parseSeed(seedText('storage_bandwidth: { default: 200MiB/s, nfs-1: 1.5GB }'));
    expect(seed.instance.storage_bandwidth).toEqual({ default: 200 * MIB, 'nfs-1': 1.5e9 });
    expect(parseSeed(seedText()).instance.storage_bandwidth).toBeUndefined();
  });

  it('names the storage of each bad value, at the value', () => {
    expect(problems(seedText('storage_bandwidth: { default: -5, nfs-1: 0 }'))).toEqual([
      `3:33: instance.storage_bandwidth.default: ${BANDWIDTH}`,
      `3:44: instance.storage_bandwidth.nfs-1: ${BANDWIDTH}`,
    ]);
    expect(problems(seedText('storage_bandwidth: { default: fast }'))).toEqual([
      `3:33: instance.storage_bandwidth.default: ${BANDWIDTH}`,
    ]);
    expect(problems(seedText('storage_bandwidth: [200MiB]'))).toEqual([
      '3:22: instance.storage_bandwidth: must be a mapping of storage to bytes per second (200MiB)',
    ]);
  });

  it('refuses a storage the seed does not configure, rather than limiting nothing', () => {
    expect(problems(seedText('storage_bandwidth: { default: 200MiB, cluster: 200MiB }'))).toEqual([
      '3:50: instance.storage_bandwidth.cluster: unknown storage "cluster"',
    ]);
    // Without `storages`, the one storage is `default`.
    expect(
      problems(
        ['instance:', '  storage_bandwidth: { nfs-1: 1MiB }', 'users: [{ id: 1, username: root }]', ''].join('\n'),
      ),
    ).toEqual(['2:31: instance.storage_bandwidth.nfs-1: unknown storage "nfs-1"']);
  });
});

describe('instance.disk_busy', () => {
  const bw = 'storage_bandwidth: { default: 200MiB }';

  it.each([
    [60, 60_000],
    [0, 0],
    ['500ms', 500],
    ['60s', 60_000],
    ['2m', 120_000],
    ['1.5h', 5_400_000],
  ])('reads the time %j as %d ms from the start', (value, ms) => {
    expect(parseOffsetMs(value)).toBe(ms);
  });

  it.each([-1, 'soon', '60', '5d', null])('refuses the time %j', (value) => {
    expect(parseOffsetMs(value)).toBeNull();
  });

  it('keeps the windows, their times in ms from the start', () => {
    const seed = parseSeed(seedText(bw, 'disk_busy: [{ storage: default, share: 0.5, from: 500ms, to: 1h }]'));
    expect(seed.instance.disk_busy).toEqual([{ storage: 'default', share: 0.5, fromMs: 500, toMs: 3_600_000 }]);
  });

  it('refuses a window that ends before it starts, or at its start', () => {
    expect(
      problems(
        seedText(
          bw,
          'disk_busy:',
          '  - { storage: default, share: 0.5, from: 60s, to: 30s }',
          '  - { storage: default, share: 0.5, from: 1m, to: 60s }',
        ),
      ),
    ).toEqual([
      '5:54: instance.disk_busy.0.to: must be after from',
      '6:53: instance.disk_busy.1.to: must be after from',
    ]);
  });

  it('refuses a share outside 0..1, both ends excluded', () => {
    const share = 'must be a share of the bandwidth, above 0 and below 1';
    expect(
      problems(
        seedText(
          bw,
          'disk_busy:',
          '  - { storage: default, share: 1.5, from: 0, to: 10 }',
          '  - { storage: default, share: 0, from: 0, to: 10 }',
          '  - { storage: default, share: 1, from: 0, to: 10 }',
          '  - { storage: default, share: half, from: 0, to: 10 }',
        ),
      ),
    ).toEqual([
      `5:34: instance.disk_busy.0.share: ${share}`,
      `6:34: instance.disk_busy.1.share: ${share}`,
      `7:34: instance.disk_busy.2.share: ${share}`,
      `8:34: instance.disk_busy.3.share: ${share}`,
    ]);
  });

  it('refuses an unknown storage, and a storage without a bandwidth to take a share of', () => {
    expect(
      problems(
        seedText(
          bw,
          'disk_busy:',
          '  - { storage: cluster, share: 0.5, from: 0, to: 10 }',
          '  - { storage: nfs-1, share: 0.5, from: 0, to: 10 }',
        ),
      ),
    ).toEqual([
      '5:18: instance.disk_busy.0.storage: unknown storage "cluster"',
      '6:18: instance.disk_busy.1.storage: storage "nfs-1" has no instance.storage_bandwidth to take a share of',
    ]);
  });

  it('names every bad field of a window at once, an unknown one with the known ones', () => {
    expect(
      problems(seedText(bw, 'disk_busy: [{ storage: default, share: 0.5, from: soon, to: -1, extra: 1 }]')),
    ).toEqual([
      '4:53: instance.disk_busy.0.from: must be a time from the sandbox start: seconds, or 500ms, 60s, 2m, 1h',
      '4:63: instance.disk_busy.0.to: must be a time from the sandbox start: seconds, or 500ms, 60s, 2m, 1h',
      '4:67: instance.disk_busy.0.extra: unknown field "extra"; known fields: storage, share, from, to',
    ]);
    expect(problems(seedText(bw, 'disk_busy: { storage: default }'))).toEqual([
      '4:14: instance.disk_busy: must be a list of {storage, share, from, to}',
    ]);
  });
});
