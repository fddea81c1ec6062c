/**
 * `move.concurrency: auto` in a run: one limiter per run process (src/schedule/auto-limit.ts
 * decides; this keeps its state, feeds it and saves it). The drain tells it of every move that
 * ended as polled (its bytes, and how long it was seen in flight); the cap in force (./cap.ts)
 * asks it for the operator's cap at every turn. Its state is checkpoint state (`auto_cap`): a
 * resumed run goes on from the cap and the knee it had, and judges nothing on the moves it finds
 * in flight (the first window after a resume only settles).
 */
import { autoBounds } from '../plan/concurrency-field.js';
import { decideAuto, observeMove, startAuto } from '../schedule/auto-limit.js';
import type { AutoBounds, AutoState } from '../schedule/auto-limit.js';
import type { AutoCapStore } from '../store/views.js';
import type { ActorDeps } from './types.js';

/** A window lasts a minute of the run's clock at most, so a busier instance is seen within one. */
const MAX_WINDOW_MS = 60_000;

/** The limiter of one run, and the words of its last change. */
interface Limiter {
  state: AutoState;
  reason: string;
  bounds: AutoBounds;
}

const limiters = new WeakMap<object, Limiter>();

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const numOrNull = (x: unknown) => x === null || isNum(x);
const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;

/**
 * Whether a checkpoint's row holds every field the limiter reads (the window aside: a resumed run
 * starts a fresh one). The fields added since schema 22's first limiter may be absent.
 */
function isAutoState(x: unknown): x is AutoState {
  if (!isObj(x)) return false;
  if (!isNum(x.cap) || !Number.isInteger(x.cap) || x.cap < 0) return false;
  if (x.phase !== 'start' && x.phase !== 'steady') return false;
  if (typeof x.settling !== 'boolean' || typeof x.pinned !== 'boolean' || !isNum(x.held)) return false;
  if (!numOrNull(x.ref) || !numOrNull(x.knee)) return false;
  const l = x.last;
  if (l !== null && !(isObj(l) && isNum(l.cap) && isNum(l.bytesPerSec) && numOrNull(l.msPerByte) && isNum(l.moves)))
    return false;
  if (x.fit !== undefined && !(isObj(x.fit) && isNum(x.fit.a) && isNum(x.fit.c))) return false;
  const p = x.peak;
  if (!(p === undefined || p === null || (isObj(p) && isNum(p.msPerByte) && isNum(p.cap)))) return false;
  const bw = x.bw;
  if (bw !== undefined && !(Array.isArray(bw) && bw.every((e) => Array.isArray(e) && e.length === 2 && e.every(isNum))))
    return false;
  const b = x.busy;
  return b === undefined || b === null || (isObj(b) && isNum(b.cap) && isNum(b.bandwidth));
}

/** The state a checkpoint kept, or null (none, or not readable as one: the limiter starts fresh). */
export function savedAutoState(store: Pick<AutoCapStore, 'getAutoCap'>): { state: AutoState; reason: string } | null {
  const raw = store.getAutoCap();
  if (raw === null) return null;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!isObj(v) || v.v !== 1 || !isAutoState(v.state)) return null;
  return { state: v.state, reason: typeof v.reason === 'string' ? v.reason : `auto: ${v.state.cap}` };
}

function limiterOf(deps: ActorDeps<AutoCapStore>, bounds: AutoBounds): Limiter {
  let l = limiters.get(deps);
  if (l) return l;
  const now = deps.clock.now();
  const saved = savedAutoState(deps.store);
  if (saved) {
    // The moves in flight now started before this process: the first window only settles.
    const state: AutoState = {
      ...saved.state,
      window: { from: now, moves: 0, bytes: 0, timed: [], maxInFlight: null },
      settling: true,
    };
    l = { state, reason: `auto: resumed at ${state.cap}`, bounds };
  } else {
    const state = startAuto(bounds, now);
    l = { state, reason: `auto: starting at ${state.cap} (min ${bounds.min}, max ${bounds.max})`, bounds };
  }
  limiters.set(deps, l);
  return l;
}

function save(deps: ActorDeps<AutoCapStore>, l: Limiter): void {
  deps.store.setAutoCap(JSON.stringify({ v: 1, state: l.state, reason: l.reason }), deps.clock.now());
}

/** A move ended as polled: its bytes (null: unknown size) and how long it was seen in flight. */
export function noteAutoMove(deps: ActorDeps<AutoCapStore>, bytes: number | null, durationMs: number | null): void {
  const bounds = autoBounds(deps.plan.move.concurrency);
  if (!bounds) return;
  const l = limiterOf(deps, bounds);
  l.state = observeMove(l.state, bytes, durationMs);
}

/**
 * The limiter's cap for now and its words, deciding when a window closed (null: the plan's
 * concurrency is a number). `pinned` is a cap set with `shardmove control`, which holds it.
 */
export function autoCap(deps: ActorDeps<AutoCapStore>, pinned: number | null): { cap: number; reason: string } | null {
  const bounds = autoBounds(deps.plan.move.concurrency);
  if (!bounds) return null;
  const l = limiterOf(deps, bounds);
  const before = l.state;
  const { state, decision, seen } = decideAuto(before, {
    now: deps.clock.now(),
    bounds,
    timing: {
      minWindowMs: 2 * deps.plan.poll.intervalMs,
      maxWindowMs: Math.max(MAX_WINDOW_MS, 2 * deps.plan.poll.intervalMs),
    },
    inFlight: deps.store.countInFlight(),
    pinned,
  });
  l.state = state;
  if (decision.reason !== null) l.reason = decision.reason;
  // Each window's figures, for tuning and for an operator asking why the cap did (not) move.
  if (seen) deps.log.debug({ auto: { ...seen, inFlight: before.window.maxInFlight } }, 'auto: window measured');
  // Saved when a window closed or the pin changed: between windows only the counts grow.
  if (state.window.from !== before.window.from || state.pinned !== before.pinned || state.cap !== before.cap)
    save(deps, l);
  return { cap: state.cap, reason: l.reason };
}

/** The knee a checkpoint's limiter found, or null. */
export function savedKnee(store: Pick<AutoCapStore, 'getAutoCap'>): number | null {
  return savedAutoState(store)?.state.knee ?? null;
}
