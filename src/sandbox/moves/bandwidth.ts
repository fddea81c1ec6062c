/**
 * The engine's side of the disk model (./disks.ts): which copies it times, their transfers starting
 * and ending, and their due times following the disks' shares. A copy is bandwidth-bound when the
 * engine has a model, the copy writes anything and succeeds or fails only at its end, and either of
 * its storages has a bandwidth; other moves keep the size-based timing (./policy.ts).
 */
import { FIXED_COPY_MS, fixedPartMs } from './policy.js';
import type { EngineCore, Queued, Running } from './core.js';
import { copies } from './core.js';

/** Whether the disk model times `q`'s copy. */
export function bandwidthBound(core: EngineCore, q: Queued, failure: string | null): boolean {
  const d = core.disks;
  return d !== null && failure === null && copies(core, q) && (d.limits(q.source) || d.limits(q.destination));
}

/**
 * `r`'s transfer of `bytes` starts at `r.startedAt`; its due time is the transfer's end plus the
 * fixed part (none for a copy that fails when the disk is full). Other copies' ends move.
 */
export function startTransfer(core: EngineCore, r: Running, bytes: number, outOfRoom: boolean): void {
  const disks = core.disks;
  if (!disks) return;
  r.tailMs = outOfRoom ? 0 : fixedPartMs(FIXED_COPY_MS, core.options.speed);
  disks.add({ id: r.id, source: r.source, destination: r.destination }, bytes, r.startedAt);
  r.due = disks.endOf(r.id) + r.tailMs;
  resync(core, r);
}

/** Re-reads every transferring copy's end from the model and stores the ones that moved. */
export function resync(core: EngineCore, except?: Running): void {
  const disks = core.disks;
  if (!disks) return;
  for (const r of core.running) {
    if (r === except || r.phase !== 'started' || r.tailMs === undefined) continue;
    const due = disks.endOf(r.id) + r.tailMs;
    if (due === r.due || !Number.isFinite(due)) continue;
    r.due = due;
    core.setDue.run(due, r.id);
  }
}

/**
 * `r`'s copy ended (its transfer with it): the others' ends move. Not `r`'s own: the model no longer
 * knows it, and its due time is the copy's end, which the cleanup counts from.
 */
export function endTransfer(core: EngineCore, r: Running): void {
  if (r.tailMs === undefined || !core.disks) return;
  core.disks.forget(r.id, r.due);
  resync(core, r);
}

/**
 * A bandwidth-bound copy found running at a reload: what is left of it is estimated from its stored
 * due time as if it had gone at one rate since it started (the model's state is not stored). Its
 * due time stays the stored one: the reload resyncs every copy once all are back (it reads the
 * records through a cursor, and the database takes no write while one is open).
 */
export function resumeTransfer(core: EngineCore, r: Running, fullBytes: number, now: number): void {
  const disks = core.disks;
  if (!disks) return;
  const tail = fixedPartMs(FIXED_COPY_MS, core.options.speed);
  const end = r.due - tail;
  const share = end <= now ? 0 : end <= r.startedAt ? 1 : (end - now) / (end - r.startedAt);
  const left = Math.round(fullBytes * share);
  r.tailMs = tail;
  disks.add({ id: r.id, source: r.source, destination: r.destination }, left, now, fullBytes - left);
}

/** Bytes a copy outside the disk model read and wrote, counted whole when it ends. */
export function countCopied(core: EngineCore, r: Running, bytes: number): void {
  if (r.tailMs !== undefined) return;
  for (const [storage, side] of [
    [r.source, 'read'],
    [r.destination, 'written'],
  ] as const) {
    const c = core.copiedBytes.get(storage) ?? { read: 0, written: 0 };
    c[side] += bytes;
    core.copiedBytes.set(storage, c);
  }
}
