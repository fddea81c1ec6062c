/**
 * Where each storage lives on the Gitaly node: the seed's `instance.storage_filesystems`, which maps a
 * storage to the filesystem its path is on (mountpoint, device, fstype), as an operator reads it from
 * Gitaly's configuration and `df`. node_exporter's series (./exporters/node-exporter.ts) carry exactly
 * these labels and no storage name, so the mapping is what lets a query find a storage's room.
 *
 * A storage without an entry gets `/var/opt/gitlab/git-data/<storage>` on its own block device
 * (`/dev/sdb`, `/dev/sdc`, ... in the order of `instance.storages`, skipping seeded ones), xfs. Each storage is its own
 * filesystem in the sandbox: two storages on one mountpoint or one device are refused.
 */
import { z } from 'zod';

/** One storage's filesystem. */
export interface StorageFilesystem {
  mountpoint: string;
  /** node_exporter's `device` label: `/dev/sdb`, or `server:/export` for an NFS mount. */
  device: string;
  fstype: string;
}

const ABSOLUTE = 'must be an absolute path such as /var/opt/gitlab/git-data';

/** The seed field's schema (configuration, applied at every start). */
export const storageFilesystemsField = z
  .record(
    z.string(),
    z.strictObject(
      {
        mountpoint: z
          .string({ error: ABSOLUTE })
          .regex(/^\/[^\n"\\]*$/, { error: ABSOLUTE })
          .refine((v) => v === '/' || !v.endsWith('/'), { error: 'must not end with /' }),
        device: z
          .string({ error: 'must be a non-empty string' })
          .regex(/^[^\s"\\]+$/, { error: 'must be a device such as /dev/sdb or nfs-1.example.com:/export/git' }),
        fstype: z
          .string({ error: 'must be a filesystem type such as xfs, ext4 or nfs4' })
          .regex(/^[a-z0-9._-]+$/, { error: 'must be a filesystem type such as xfs, ext4 or nfs4' })
          .optional(),
      },
      { error: 'must be a mapping with mountpoint, device and optionally fstype' },
    ),
    { error: 'must be a mapping of storage to {mountpoint, device, fstype}' },
  )
  .optional();

/** `sdb`, `sdc`, ..., `sdz`, `sdaa`, ...: block device names as the kernel gives them (`sda` holds the system). */
export function diskName(index: number): string {
  let n = index + 2;
  let name = '';
  while (n > 0) {
    n -= 1;
    name = String.fromCharCode(97 + (n % 26)) + name;
    n = Math.floor(n / 26);
  }
  return `sd${name}`;
}

/**
 * Every configured storage's filesystem, the seeded ones and the defaults; a default disk is the
 * next `sdX` no seeded storage uses.
 */
export function storageFilesystems(config: {
  storages: readonly string[];
  storage_filesystems?: Record<string, { mountpoint: string; device: string; fstype?: string | undefined }>;
}): Map<string, StorageFilesystem> {
  const seeded = config.storage_filesystems ?? {};
  const taken = new Set(Object.values(seeded).map((f) => f.device));
  let next = 0;
  const freeDisk = () => {
    while (taken.has(`/dev/${diskName(next)}`)) next += 1;
    return `/dev/${diskName(next++)}`;
  };
  const out = new Map<string, StorageFilesystem>();
  for (const storage of config.storages) {
    const f = seeded[storage];
    out.set(
      storage,
      f
        ? { mountpoint: f.mountpoint, device: f.device, fstype: f.fstype ?? 'xfs' }
        : { mountpoint: `/var/opt/gitlab/git-data/${storage}`, device: freeDisk(), fstype: 'xfs' },
    );
  }
  return out;
}

/**
 * The cross-field rules: entries name configured storages, and no two storages share a mountpoint
 * or a device (defaults included). Reads the raw seed defensively: it may have other problems.
 */
export function storageFilesystemRules(
  instance: Record<string, unknown>,
  problem: (path: (string | number)[], message: string) => void,
): void {
  const raw = instance.storage_filesystems;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return;
  const storages = Array.isArray(instance.storages)
    ? instance.storages.filter((s): s is string => typeof s === 'string')
    : ['default'];
  const seeded: Record<string, { mountpoint: string; device: string; fstype?: string }> = {};
  for (const [storage, fs] of Object.entries(raw as Record<string, unknown>)) {
    if (!storages.includes(storage))
      problem(['instance', 'storage_filesystems', storage], `unknown storage "${storage}"`);
    const f = (typeof fs === 'object' && fs !== null ? fs : {}) as Record<string, unknown>;
    if (typeof f.mountpoint === 'string' && typeof f.device === 'string')
      seeded[storage] = { mountpoint: f.mountpoint, device: f.device };
  }
  const all = storageFilesystems({ storages, storage_filesystems: seeded });
  const owner = { mountpoint: new Map<string, string>(), device: new Map<string, string>() };
  for (const [storage, fs] of all) {
    for (const key of ['mountpoint', 'device'] as const) {
      const other = owner[key].get(fs[key]);
      if (other !== undefined) {
        // Reported at the seeded entry (a default one is not in the file).
        const [at, them] = storage in seeded ? [storage, other] : [other, storage];
        problem(
          ['instance', 'storage_filesystems', at, key],
          `${fs[key]} is ${them}'s ${key} too: each storage is its own filesystem in the sandbox`,
        );
      }
      owner[key].set(fs[key], storage);
    }
  }
}
