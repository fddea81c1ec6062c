/**
 * How fast each storage's disk is, and another tenant's load on it: the seed's
 * `instance.storage_bandwidth` (bytes per second, `200MiB` or a number of bytes) and
 * `instance.disk_busy` (a window of the sandbox's clock, from its start, in which something else
 * takes a share of one disk's bandwidth: another tenant's backup). The move engine's disk model
 * (./moves/disks.ts) reads both.
 */
import { z } from 'zod';

/** A window in which another tenant takes `share` of `storage`'s bandwidth (ms from the sandbox's start). */
export interface DiskBusyWindow {
  storage: string;
  share: number;
  fromMs: number;
  toMs: number;
}

const UNITS: Record<string, number> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
};
const BANDWIDTH = 'must be bytes per second: a positive number, or a size such as 200MiB or 1.5GB';

/** Bytes per second from `200MiB`, `200MiB/s`, `1.5GB` or a number of bytes; null when it is none. */
export function parseBandwidth(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 ? value : null;
  if (typeof value !== 'string') return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?(?:\/s)?\s*$/.exec(value);
  if (!m) return null;
  const bytes = Number(m[1]) * (UNITS[m[2] ?? 'B'] as number);
  return bytes > 0 ? bytes : null;
}

const SECONDS = 'must be a time from the sandbox start: seconds, or 500ms, 60s, 2m, 1h';
const TIME_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds from `60s`, `2m`, `500ms`, `1h` or a number of seconds; null when it is none. */
export function parseOffsetMs(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value * 1000 : null;
  if (typeof value !== 'string') return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(value);
  return m ? Number(m[1]) * (TIME_UNITS[m[2] as string] as number) : null;
}

const bandwidth = z.unknown().transform((v, ctx) => {
  const bytes = parseBandwidth(v);
  if (bytes === null) ctx.addIssue({ code: 'custom', message: BANDWIDTH });
  return bytes ?? 0;
});

const offset = z.unknown().transform((v, ctx) => {
  const ms = parseOffsetMs(v);
  if (ms === null) ctx.addIssue({ code: 'custom', message: SECONDS });
  return ms ?? 0;
});

const SHARE = 'must be a share of the bandwidth, above 0 and below 1';

/** `instance.storage_bandwidth`: storage to bytes per second. */
export const storageBandwidthField = z
  .record(z.string(), bandwidth, { error: 'must be a mapping of storage to bytes per second (200MiB)' })
  .optional();

/** `instance.disk_busy`: the windows another tenant takes part of a disk. */
export const diskBusyField = z
  .array(
    z
      .strictObject(
        {
          storage: z.string({ error: 'must be a storage name' }),
          share: z.number({ error: SHARE }).gt(0, { error: SHARE }).lt(1, { error: SHARE }),
          from: offset,
          to: offset,
        },
        { error: 'must be a mapping with storage, share, from and to' },
      )
      .superRefine((w, ctx) => {
        if (w.to <= w.from) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
      })
      .transform((w): DiskBusyWindow => ({ storage: w.storage, share: w.share, fromMs: w.from, toMs: w.to })),
    { error: 'must be a list of {storage, share, from, to}' },
  )
  .optional();

/**
 * The storages both fields name must be configured; a busy window on a disk without a bandwidth
 * would change nothing, so it is refused rather than silently ignored.
 */
export function diskRules(
  instance: Record<string, unknown>,
  problem: (path: (string | number)[], message: string) => void,
): void {
  const storages = Array.isArray(instance.storages) ? instance.storages : ['default'];
  const bw = instance.storage_bandwidth;
  const limited = typeof bw === 'object' && bw !== null && !Array.isArray(bw) ? Object.keys(bw) : [];
  for (const k of limited)
    if (!storages.includes(k)) problem(['instance', 'storage_bandwidth', k], `unknown storage "${k}"`);
  const busy = Array.isArray(instance.disk_busy) ? (instance.disk_busy as unknown[]) : [];
  for (const [i, w] of busy.entries()) {
    const name = typeof w === 'object' && w !== null ? (w as { storage?: unknown }).storage : undefined;
    if (typeof name !== 'string') continue;
    if (!storages.includes(name)) problem(['instance', 'disk_busy', i, 'storage'], `unknown storage "${name}"`);
    else if (!limited.includes(name))
      problem(
        ['instance', 'disk_busy', i, 'storage'],
        `storage "${name}" has no instance.storage_bandwidth to take a share of`,
      );
  }
}
