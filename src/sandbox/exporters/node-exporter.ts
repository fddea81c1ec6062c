/**
 * What node_exporter on the Gitaly node says about the filesystems the storages live on and their
 * disks (node_exporter 1.x, `collector/filesystem_linux.go`, `collector/diskstats_linux.go`): the
 * filesystem series carry `device`, `fstype` and `mountpoint` and no storage name; the disk series
 * carry the kernel's device name (`sdb`, not `/dev/sdb`). Storages map to filesystems through the
 * seed's `instance.storage_filesystems` (../seed-filesystems.ts).
 *
 * - Sizes: `size` is the seeded `instance.storage_capacity`; `avail` and `free` are the size minus
 *   what the storage's repositories, the copies moves left there, its object pools and the moves in
 *   flight take, never below 0. The sandbox reserves no blocks for root, so `free` equals `avail`.
 *   Storages without a capacity have no filesystem series (a filesystem nobody measured).
 * - Inodes (a model): one per 16 KiB of the filesystem, one used per 16 KiB stored.
 * - `readonly` and `device_error` are 0: the sandbox's filesystems do not fail.
 * - `node_disk_io_time_seconds_total`: seconds the disk was busy with moves, for block devices
 *   (`/dev/...`) only; an NFS mount has no disk on this node. With a seeded bandwidth it follows the
 *   disk model (../moves/disks.ts: the copies' share of the bandwidth and other tenants' windows),
 *   else the number of moves on it (../moves/load.ts).
 * - `node_disk_read_bytes_total` / `node_disk_written_bytes_total`: bytes the moves' copies read from
 *   the disk (a move's source) and wrote to it (its destination), for the same devices. A copy the
 *   disk model times counts its bytes as they go; another counts them whole when it succeeds. Other
 *   tenants' I/O is not counted: the sandbox knows their share of the time, not their bytes.
 */
import type { EngineLoad } from '../http/context.js';
import type { StorageFilesystem } from '../seed-filesystems.js';
import type { Family, Series } from './exposition.js';
import { renderFamilies } from './exposition.js';

/** Bytes of the filesystem per inode, in the sandbox's model. */
export const BYTES_PER_INODE = 16_384;

/** The exposition text of the node's filesystems and disks. */
export function renderNodeExporter(load: EngineLoad, filesystems: ReadonlyMap<string, StorageFilesystem>): string {
  const fs = (key: string, help: string, value: (size: number, used: number) => number): Family => ({
    name: `node_filesystem_${key}`,
    type: 'gauge',
    help,
    series: load.storages.flatMap((g): Series[] => {
      const f = filesystems.get(g.storage);
      if (!f || g.capacityBytes === null) return [];
      const size = g.capacityBytes;
      const used = Math.min(size, Math.max(0, g.usedBytes ?? 0));
      return [{ labels: { device: f.device, fstype: f.fstype, mountpoint: f.mountpoint }, value: value(size, used) }];
    }),
  });
  const inodes = (bytes: number) => Math.floor(bytes / BYTES_PER_INODE);
  const disk = (value: (g: EngineLoad['storages'][number]) => number): Series[] =>
    load.storages.flatMap((g): Series[] => {
      const device = filesystems.get(g.storage)?.device;
      return device?.startsWith('/dev/') ? [{ labels: { device: device.slice('/dev/'.length) }, value: value(g) }] : [];
    });
  return renderFamilies([
    fs('avail_bytes', 'Filesystem space available to non-root users in bytes.', (size, used) => size - used),
    fs('device_error', 'Whether an error occurred while getting statistics for the given device.', () => 0),
    fs('files', 'Filesystem total file nodes.', (size) => inodes(size)),
    fs('files_free', 'Filesystem total free file nodes.', (size, used) =>
      Math.max(0, inodes(size) - Math.ceil(used / BYTES_PER_INODE)),
    ),
    fs('free_bytes', 'Filesystem free space in bytes.', (size, used) => size - used),
    fs('readonly', 'Filesystem read-only status.', () => 0),
    fs('size_bytes', 'Filesystem size in bytes.', (size) => size),
    {
      name: 'node_disk_io_time_seconds_total',
      type: 'counter',
      help: 'Total seconds spent doing I/Os.',
      series: disk((g) => g.ioSeconds),
    },
    {
      name: 'node_disk_read_bytes_total',
      type: 'counter',
      help: 'The total number of bytes read successfully.',
      series: disk((g) => g.readBytes),
    },
    {
      name: 'node_disk_written_bytes_total',
      type: 'counter',
      help: 'The total number of bytes written successfully.',
      series: disk((g) => g.writtenBytes),
    },
  ]);
}
