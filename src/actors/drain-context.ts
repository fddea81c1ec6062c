/**
 * What one drain of (source, kind) carries around, and the small helpers every drain file shares:
 * the item store behind the checkpoint, events, abort checks and absolute-deadline waits.
 */
import type { Kind } from '../plan/types.js';
import type { CheckpointStore, ItemStore } from '../store/types.js';
import { DrainError, STORE_NO_ITEMS, abortError } from './drain-errors.js';
import type { ActorDeps } from './types.js';

export type DrainStore = CheckpointStore & ItemStore;

export interface DrainCtx {
  deps: ActorDeps;
  store: DrainStore;
  kind: Kind;
  source: string;
  destination: string;
}

/** The checkpoint's item-level part; openCheckpoint() provides both parts on one object. */
export function itemStoreOf(store: CheckpointStore): DrainStore {
  const s = store as Partial<ItemStore> & CheckpointStore;
  if (typeof s.recordPage !== 'function' || typeof s.markIntent !== 'function')
    throw new DrainError(STORE_NO_ITEMS, 'the checkpoint store has no item-level part (use openCheckpoint)');
  return s as DrainStore;
}

export function createDrainCtx(deps: ActorDeps, source: string, kind: Kind): DrainCtx {
  return { deps, store: itemStoreOf(deps.store), kind, source, destination: deps.plan.move.to };
}

/** Appends an event stamped with the injected clock. */
export function event(ctx: DrainCtx, type: string, data: Record<string, unknown>): void {
  ctx.store.appendEvent(type, { kind: ctx.kind, source: ctx.source, ...data }, ctx.deps.clock.now());
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
export async function waitUntilOr(ctx: DrainCtx, deadline: number, wake: Promise<unknown>): Promise<'deadline' | 'event'> {
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
  const woken = wake.then(() => 'event' as const, () => 'event' as const);
  const first = await Promise.race([timer, woken]);
  if (first === 'event') {
    cancel.abort();
    await timer;
  }
  return first;
}
