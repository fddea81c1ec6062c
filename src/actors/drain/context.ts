/**
 * What one drain of (source, kind) carries around, and the small helpers every drain file shares:
 * events, abort checks, absolute-deadline waits and the live control.
 */
import type { AuditEventMap, DrainEventType } from '../../events/vocabulary.js';
import type { Kind } from '../../plan/types.js';
import type { ItemRow, RunControl } from '../../store/types.js';
import { capInForce } from '../cap.js';
import { abortError } from '../errors.js';
import type { ActorDeps } from '../types.js';
import type { DrainStore } from '../../store/views.js';

/** One drain's context; `store` is `deps.store`, kept beside it because every drain file uses it. */
export interface DrainCtx {
  deps: ActorDeps<DrainStore>;
  store: DrainStore;
  kind: Kind;
  source: string;
  /** The plan's first destination: the only one of most plans, and bulk mode's (which allows one). */
  destination: string;
  /** Every destination of the plan (`move.to` may list several). */
  destinations: readonly string[];
}

/** The context of the drain of `kind` off `source`. */
export function createDrainCtx(deps: ActorDeps<DrainStore>, source: string, kind: Kind): DrainCtx {
  const to = deps.plan.move.to;
  return { deps, store: deps.store, kind, source, destination: to[0]!, destinations: to };
}

/** Where `row` goes: its recorded destination, or, not placed yet, the plan's first. */
export function destinationOf(ctx: DrainCtx, row: Pick<ItemRow, 'destination'>): string {
  return row.destination ?? ctx.destination;
}

/**
 * Whether an item found on `storage` has arrived: its recorded destination, or, not placed yet,
 * any destination of the plan.
 */
export function arrivedOn(ctx: DrainCtx, row: Pick<ItemRow, 'destination'>, storage: string): boolean {
  return row.destination ? storage === row.destination : ctx.destinations.includes(storage);
}

/** A drain event's own fields: the drain's kind and source are added (or named, for another drain). */
export type DrainEventData<K extends DrainEventType> = Omit<AuditEventMap[K], 'kind' | 'source'> &
  Partial<Pick<AuditEventMap[K], 'kind' | 'source'>>;

/** Appends an event of this drain, stamped with the injected clock. */
export function event<K extends DrainEventType>(ctx: DrainCtx, type: K, data: DrainEventData<K>): void {
  // The drain's kind and source complete the data; TypeScript cannot see that through Omit on a generic.
  const full = { kind: ctx.kind, source: ctx.source, ...data } as AuditEventMap[K];
  ctx.store.appendEvent(type, full, ctx.deps.clock.now());
}

export function throwIfAborted(ctx: DrainCtx): void {
  if (ctx.deps.signal.aborted) throw abortError(ctx.deps.signal);
}

/** Waits until the absolute time `deadline` (ms since epoch), abortably. */
export async function waitUntil(ctx: DrainCtx, deadline: number): Promise<void> {
  const ms = deadline - ctx.deps.clock.now();
  if (ms <= 0) return;
  try {
    await ctx.deps.clock.sleep(ms, ctx.deps.signal);
  } catch (err) {
    if (ctx.deps.signal.aborted) throw abortError(ctx.deps.signal);
    throw err;
  }
}

/**
 * Waits until the absolute time `deadline` or until `wake` settles, whichever comes first; the
 * timer is cancelled when `wake` wins. Returns which one ended the wait.
 */
export async function waitUntilOr(
  ctx: DrainCtx,
  deadline: number,
  wake: Promise<unknown>,
): Promise<'deadline' | 'event'> {
  const ms = deadline - ctx.deps.clock.now();
  if (ms <= 0) return 'deadline';
  const cancel = new AbortController();
  const signal = AbortSignal.any([ctx.deps.signal, cancel.signal]);
  const timer = ctx.deps.clock.sleep(ms, signal).then(
    () => 'deadline' as const,
    (err: unknown) => {
      if (ctx.deps.signal.aborted) throw abortError(ctx.deps.signal);
      if (cancel.signal.aborted) return 'event' as const;
      throw err;
    },
  );
  const woken = wake.then(
    () => 'event' as const,
    () => 'event' as const,
  );
  const first = await Promise.race([timer, woken]);
  if (first === 'event') {
    cancel.abort();
    await timer;
  }
  return first;
}

/** Logs a live override when the loop first sees it (or sees it change); returns the new key. */
export function noteControl(ctx: DrainCtx, control: RunControl, cap: number, seen: string | null): string {
  const key = `${control.paused}:${control.concurrency}`;
  if (key === seen || (seen === null && !control.paused && control.concurrency === null)) return key;
  const fields = {
    kind: ctx.kind,
    source: ctx.source,
    paused: control.paused,
    concurrency: cap,
    planConcurrency: ctx.deps.plan.move.concurrency,
  };
  if (control.paused) ctx.deps.log.info(fields, 'paused: no new moves; moves in flight are followed to their end');
  else ctx.deps.log.info(fields, 'concurrency cap in force');
  return key;
}

/**
 * Bulk POSTs wait while the run is paused or outside every maintenance window (checked once per
 * poll interval).
 */
export async function waitWhilePaused(ctx: DrainCtx): Promise<void> {
  let seen: string | null = null;
  for (;;) {
    const { cap, control } = await capInForce(ctx.deps);
    seen = noteControl(ctx, control, cap, seen);
    if (!control.paused && cap > 0) return;
    throwIfAborted(ctx);
    await waitUntil(ctx, ctx.deps.clock.now() + ctx.deps.plan.poll.intervalMs);
  }
}
