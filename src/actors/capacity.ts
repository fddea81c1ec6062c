/**
 * The room check of pre-flight (issue 22 item 3): the bytes that will land on the destination
 * against the room it has, before the first write (the weights included). Read-only: it lists the
 * sources' items (the drains list them again, as they always did) and reads the free space, declared
 * in the plan or answered by Prometheus.
 *
 * GitLab reports `statistics.repository_size` for projects only. Snippets and group wikis have no
 * size in the API, so each counts with a fixed allowance (SIZE_ALLOWANCE): generous for a snippet,
 * modest for a wiki. A project whose size the instance does not report counts with the project
 * allowance. The fit table says how many items were counted by allowance.
 */
import type { KindAccessMode } from '../api/types.js';
import { formatBytes } from '../plan/capacity-field.js';
import type { Kind } from '../plan/types.js';
import { CAPACITY_EXCEEDED, StepError } from './errors.js';
import type { ActorDeps } from './types.js';

const MIB = 2 ** 20;
/** Bytes counted for an item whose size the API does not give (documented in docs/operations.md). */
export const SIZE_ALLOWANCE: Readonly<Record<Kind, number>> = { projects: 100 * MIB, snippets: 10 * MIB, groups: 100 * MIB };

/** One line of the fit table. */
export interface FitRow {
  storage: string;
  neededBytes: number;
  keepFreeBytes: number;
  freeBytes: number | null;
  /** Items counted by allowance, not by a reported size. */
  byAllowance: number;
  /** Kinds that could not be listed (moved by records): their bytes are not counted. */
  uncounted: Kind[];
  fits: boolean | null;
}

/** The fit table as text: one line per receiving storage. */
export function describeFit(r: FitRow): string {
  const free = r.freeBytes === null ? 'unknown' : formatBytes(r.freeBytes);
  const verdict = r.fits === null ? 'not checked' : r.fits ? 'fits' : 'DOES NOT FIT';
  const extra = [
    r.byAllowance > 0 ? `${r.byAllowance} item(s) counted by allowance (no size in the API)` : '',
    r.uncounted.length > 0 ? `${r.uncounted.join(', ')} not counted (not listable)` : '',
  ].filter(Boolean).join('; ');
  return `room on ${r.storage}: needs ${formatBytes(r.neededBytes)} + keep_free ${formatBytes(r.keepFreeBytes)}, free ${free}: ${verdict}${extra ? ` (${extra})` : ''}`;
}

/**
 * Checks the room; returns the lines to report. Throws (exit 1, before any write) when the bytes
 * plus `keep_free` exceed the room, except in a dry run, which reports and refuses nothing.
 */
export async function checkCapacity(deps: ActorDeps, access: Partial<Record<Kind, KindAccessMode>>): Promise<string[]> {
  const { plan, api } = deps;
  const to = plan.move.to;
  const capacity = plan.capacity;
  if (!capacity) {
    // Said once, by pre-flight (issue 22): a drain that fills its destination breaks every push there.
    deps.log.warn({ storage: to }, 'the room on the destination was not checked: the plan has no capacity section');
    return [`the room on ${to} was not checked: the plan has no capacity section (see docs/operations.md, "Rules and room from Prometheus")`];
  }
  const row: FitRow = { storage: to, neededBytes: 0, keepFreeBytes: capacity.keepFreeBytes, freeBytes: null, byAllowance: 0, uncounted: [], fits: null };
  for (const kind of plan.move.kinds) {
    if (access[kind] === 'unsupported') continue;
    if (access[kind] === 'records') {
      row.uncounted.push(kind);
      continue;
    }
    for (const source of plan.move.from) {
      for await (const page of api.listItemsOnStorage(kind, source)) {
        for (const item of page) {
          if (item.sizeBytes !== null && kind === 'projects') row.neededBytes += item.sizeBytes;
          else {
            row.neededBytes += SIZE_ALLOWANCE[kind];
            row.byAllowance += 1;
          }
        }
      }
    }
  }
  const free = capacity.storages[to];
  if (free && 'bytes' in free) row.freeBytes = free.bytes;
  else if (free && deps.prometheus) {
    let samples: Awaited<ReturnType<typeof deps.prometheus.query>>;
    try {
      samples = await deps.prometheus.query(free.query);
    } catch (err) {
      // Unread room is unchecked room: refused like room that is too small, before any write.
      throw new StepError(CAPACITY_EXCEEDED, `capacity.storages.${to}.free: the room on ${to} could not be read: ${(err as Error).message} (query: ${free.query}). Nothing was written`);
    }
    const values = samples.map((s) => s.value).filter(Number.isFinite);
    if (values.length === 0) throw new StepError(CAPACITY_EXCEEDED, `capacity.storages.${to}.free: the query answers no sample (${free.query}); the room cannot be checked`);
    row.freeBytes = Math.min(...values);
  }
  if (row.freeBytes !== null) row.fits = row.neededBytes + row.keepFreeBytes <= row.freeBytes;
  const line = describeFit(row);
  deps.log.info({ fit: row }, 'room checked');
  if (row.fits === false && !deps.dryRun) {
    throw new StepError(
      CAPACITY_EXCEEDED,
      `the drain does not fit on ${to}: it needs ${row.neededBytes} bytes (${formatBytes(row.neededBytes)}) plus capacity.keep_free ${row.keepFreeBytes} bytes, ` +
        `and ${to} has ${row.freeBytes} bytes (${formatBytes(row.freeBytes!)}) free (capacity.storages.${to}.free). Nothing was written`,
    );
  }
  return [line];
}
