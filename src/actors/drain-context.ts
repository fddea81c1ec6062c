/**
 * What one drain of (source, kind) carries around, and the small helpers every drain file shares:
 * events, abort checks, absolute-deadline waits and the live control.
 */
import type { Kind } from '../plan/types.js';
import type { ActorStore, RunControl } from '../store/types.js';
import { abortError } from './errors.js';
import type { ActorDeps } from './types.js';

/** One drain's context; `store` is `deps.store`, kept beside it because every drain file uses it. */
export interface DrainCtx {
  deps: ActorDeps;
  store: ActorStore;
  kind: Kind;
  source: string;
  destination: string;
}

/** The context of the drain of `kind` off `source`. */
export function createDrainCtx(deps: ActorDeps, source: string, kind: Kind): DrainCtx {
  return { deps, store: deps.store, kind, source, destination: deps.plan.move.to };
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

/**
 * Moves allowed in flight right now: the operator's live override (`shardmove control`) or the
 * plan's `move.concurrency`, and 0 while paused. Read from the checkpoint at every turn of the
 * scheduling loop, so a change takes effect within one poll interval.
 */
export function currentCap(ctx: DrainCtx): { cap: number; control: RunControl } {
  const control = ctx.store.readControl();
  return { cap: control.paused ? 0 : (control.concurrency ?? ctx.deps.plan.move.concurrency), control };
}

/**
 * The cap for this turn of the scheduling loop: `currentCap` (the operator's ceiling), lowered by
 * the gate (0 outside every maintenance window; the throttle's cap under load). Nothing in flight
 * is affected: a cap below the moves in flight only stops new ones.
 */
export async function allowedCap(ctx: DrainCtx): Promise<{ cap: number; control: RunControl; waitingUntil: number | null }> {
  const { cap: ceiling, control } = currentCap(ctx);
  const gate = ctx.deps.gate;
  if (!gate || ceiling <= 0) return { cap: ceiling, control, waitingUntil: null };
  const d = await gate.decide(ceiling, ctx.deps.clock.now());
  return { cap: d.cap, control, waitingUntil: d.waitingUntil };
}

/** Logs a live override when the loop first sees it (or sees it change); returns the new key. */
export function noteControl(ctx: DrainCtx, control: RunControl, cap: number, seen: string | null): string {
  const key = `${control.paused}:${control.concurrency}`;
  if (key === seen || (seen === null && !control.paused && control.concurrency === null)) return key;
  const fields = { kind: ctx.kind, source: ctx.source, paused: control.paused, concurrency: cap, planConcurrency: ctx.deps.plan.move.concurrency };
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
    const { cap, control } = await allowedCap(ctx);
    seen = noteControl(ctx, control, cap, seen);
    if (!control.paused && cap > 0) return;
    throwIfAborted(ctx);
    await waitUntil(ctx, ctx.deps.clock.now() + ctx.deps.plan.poll.intervalMs);
  }
}
