/**
 * The load the move engine puts on the instance, as the exporters of a real one count it
 * (../exporters/): Sidekiq jobs running, Gitaly's ReplicateRepository calls, and how busy each
 * storage's disk is. The engine tells it when a move takes a worker, when its copy (the
 * ReplicateRepository call on the destination's Gitaly) starts and returns, and when the worker is
 * free again, each at the sandbox time it happened.
 *
 * - Disk: a running move keeps its source and its destination busy (reading, writing, then removing
 *   the source copy); SATURATING_MOVES of them keep a disk busy all the time. Busy time accumulates
 *   into `ioSeconds` (node_exporter's `node_disk_io_time_seconds_total`), so `rate()` of it is the
 *   disk's utilisation, 0 to 1.
 * - Gitaly: ReplicateRepository is limited to one call per repository (Gitaly's built-in default
 *   concurrency limit, `limithandler/middleware.go`): a second call for a repository already being
 *   replicated waits (`queued`), the others are `inProgress`, and each runs one command at a time
 *   (tar extracting the snapshot, then git fetch). Calls to an unreachable storage never reach a
 *   Gitaly and are not counted.
 * - Counters (started, handled by gRPC code, disk time) live in this process, like an exporter's:
 *   a restarted sandbox starts them at 0, as a restarted Gitaly or a rebooted node does.
 */
import type { ItemKind } from '../db.js';
import { busyRatio } from './policy.js';

/** A move as the tracker sees it. */
export interface LoadMove {
  kind: ItemKind;
  itemId: number;
  source: string;
  destination: string;
}

/** What the exporters read. */
export interface LoadNumbers {
  /** Seconds each storage's disk has been busy since this process started. */
  ioSeconds: Map<string, number>;
  /** Moves holding a Sidekiq worker, by kind. */
  running: Map<ItemKind, number>;
  replication: {
    inProgress: number;
    queued: number;
    started: number;
    /** Calls that returned, by gRPC code name (`OK`, `Internal`, `NotFound`, ...). */
    handled: Map<string, number>;
  };
}

export interface LoadTracker {
  /** `m` took a worker at `at`; `replicating` when its copy calls ReplicateRepository on a Gitaly. */
  started(m: LoadMove, at: number, replicating: boolean): void;
  /** `m`'s ReplicateRepository call returned `code` at `at`. */
  copied(m: LoadMove, at: number, code: string): void;
  /** `m` freed its worker at `at`. */
  stopped(m: LoadMove, at: number): void;
  /** Forgets what runs (the engine rebuilds it from the database); counters stay. */
  clear(at: number): void;
  numbers(now: number): LoadNumbers;
}

/** gRPC status code names by number (google.golang.org/grpc/codes, `Code.String()`). */
export const GRPC_CODES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/**
 * The gRPC code a failed copy's `error_message` starts with (`13:...` is Internal), or null when it
 * names none (a checksum verified by Rails after the call succeeded).
 */
export function grpcCodeOf(message: string): string | null {
  const m = /^(\d+):/.exec(message);
  return m ? (GRPC_CODES[Number(m[1])] ?? null) : null;
}

export function createLoadTracker(): LoadTracker {
  const busy = new Map<string, number>();
  const io = new Map<string, { seconds: number; at: number }>();
  const running = new Map<ItemKind, number>();
  /** ReplicateRepository calls per repository (kind and id). */
  const calls = new Map<string, number>();
  let started = 0;
  const handled = new Map<string, number>();

  const storagesOf = (m: LoadMove) => (m.source === m.destination ? [m.source] : [m.source, m.destination]);
  /** Adds the busy time of `storage` up to `at` (never backwards: transitions of a tick come in due order). */
  const accrue = (storage: string, at: number) => {
    const acc = io.get(storage) ?? { seconds: 0, at };
    if (at > acc.at) {
      acc.seconds += ((at - acc.at) / 1000) * busyRatio(busy.get(storage) ?? 0);
      acc.at = at;
    }
    io.set(storage, acc);
  };
  const touch = (m: LoadMove, at: number, sign: 1 | -1) => {
    for (const storage of storagesOf(m)) {
      accrue(storage, at);
      busy.set(storage, Math.max(0, (busy.get(storage) ?? 0) + sign));
    }
    running.set(m.kind, Math.max(0, (running.get(m.kind) ?? 0) + sign));
  };
  const key = (m: LoadMove) => `${m.kind}:${m.itemId}`;
  const endCall = (m: LoadMove) => {
    const n = (calls.get(key(m)) ?? 0) - 1;
    if (n > 0) calls.set(key(m), n);
    else calls.delete(key(m));
  };
  /** Moves whose call is in flight, so that `stopped` ends a call `copied` never saw (a reload). */
  const replicating = new Set<LoadMove>();

  return {
    started(m, at, isReplicating) {
      touch(m, at, 1);
      if (!isReplicating) return;
      started += 1;
      calls.set(key(m), (calls.get(key(m)) ?? 0) + 1);
      replicating.add(m);
    },
    copied(m, _at, code) {
      if (!replicating.delete(m)) return;
      endCall(m);
      handled.set(code, (handled.get(code) ?? 0) + 1);
    },
    stopped(m, at) {
      if (replicating.delete(m)) endCall(m);
      touch(m, at, -1);
    },
    clear(at) {
      for (const storage of busy.keys()) accrue(storage, at);
      busy.clear();
      running.clear();
      calls.clear();
      replicating.clear();
    },
    numbers(now) {
      const ioSeconds = new Map<string, number>();
      for (const storage of new Set([...io.keys(), ...busy.keys()])) {
        const acc = io.get(storage) ?? { seconds: 0, at: now };
        const extra = now > acc.at ? ((now - acc.at) / 1000) * busyRatio(busy.get(storage) ?? 0) : 0;
        ioSeconds.set(storage, acc.seconds + extra);
      }
      let queued = 0;
      for (const n of calls.values()) queued += n - 1;
      return {
        ioSeconds,
        running: new Map(running),
        replication: { inProgress: calls.size, queued, started, handled: new Map(handled) },
      };
    },
  };
}
