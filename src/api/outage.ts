/**
 * Instance outages as holds, not failures. A Puma restart, a load-balancer failover or a network
 * blip makes every request fail for seconds to minutes; the client's own retries (about 3 s) are
 * too short for that, and ending a night-long drain on it leaves it stopped until someone types
 * `run`. So, once a request has used its retries on a network error, a timeout or a gateway answer
 * (502, 503, 504), it waits here: one probe (a cheap GET of /version) every `retryMs`, until the
 * instance answers again, then the request is sent again. Past `waitMs` from when the run first
 * waited, every waiting request fails with SHARDMOVE_INSTANCE_OUTAGE (its own exit code).
 *
 * Only idempotent requests wait: a POST whose answer was lost is not sent again but left to the
 * caller, which reads the item's moves first (actors/drain/reconcile.ts), and those reads wait here.
 * A quiet run (paused, held, nothing in flight) sends no request at all, so `watch` probes when no
 * answer came for a while and says when the instance stops answering.
 */
import { formatPlanDuration } from '../time/durations.js';
import { ApiHttpError, ApiNetworkError, ApiTimeoutError, InstanceOutageError, outageClock } from './errors.js';
import type { Clock } from '../shared/clock.js';
import type { OutageState } from './errors.js';

export { InstanceOutageError } from './errors.js';
export type { OutageState } from './errors.js';

/** Statuses a proxy or load balancer gives when the application behind it does not answer. */
export const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/** How often a held run asks the instance again, unless SHARDMOVE_OUTAGE_RETRY_MS says otherwise. */
export const DEFAULT_OUTAGE_RETRY_MS = 10_000;

/** What the gate tells its owner (the runtime: events, the hold on the progress line, stderr). */
export interface OutageListener {
  /** The instance stopped answering (said once per outage). */
  down(state: OutageState): void;
  /** It answers again: how long it did not. */
  up(state: OutageState, answeredAt: number): void;
}

/** The probe: null when the instance answered (any status but a gateway's), else the cause. */
export type OutageProbe = (signal?: AbortSignal) => Promise<string | null>;

/** Options of `createOutageGate`. */
export interface OutageGateOptions {
  /** `instance.outage_wait`: how long requests wait for the instance before the run ends. */
  waitMs: number;
  retryMs?: number;
  /** The run's clock: the deadline, the probes' sleeps and the health watch's interval. */
  clock: Clock;
  listener?: OutageListener;
  /** The run's signal: ends the probing loop (Ctrl-C) without waiting for its next probe. */
  signal?: AbortSignal;
}

/** One per run; the client calls `failed`, `answered` and `hold`, the runtime `watch` and `state`. */
export interface OutageGate {
  /** A request failed as an outage does, at `at`. */
  failed(cause: string, at: number): void;
  /** A request got an answer (not a gateway's): the instance is up. */
  answered(at: number): void;
  /**
   * Waits until the instance answers again; rejects with InstanceOutageError once `waitMs` passed
   * since the run first waited in this outage, or with the signal's reason when it is aborted.
   */
  hold(cause: string, signal?: AbortSignal): Promise<void>;
  /** The outage in course, or null. */
  state(): OutageState | null;
  /** The client gives its probe (it owns the connection pool and the credentials). */
  setProbe(probe: OutageProbe): void;
  /** Probes every `retryMs` while no answer came for `quietMs` (a paused or held run). */
  watch(quietMs: number): { close(): void };
  readonly retryMs: number;
  readonly waitMs: number;
}

/** The cause of an outage-like failure (ECONNREFUSED, timeout, HTTP 503), or null for any other error. */
export function outageCause(err: unknown): string | null {
  if (err instanceof ApiNetworkError) return err.causeCode ?? 'network error';
  if (err instanceof ApiTimeoutError) return 'timeout';
  if (err instanceof ApiHttpError && err.code === 'SHARDMOVE_API_HTTP' && GATEWAY_STATUSES.has(err.status))
    return `HTTP ${err.status}`;
  return null;
}

/** `HELD: the instance has not answered since 23:41:02 UTC (ECONNREFUSED); trying every 10s`. */
export function describeOutage(state: OutageState): string {
  return `the instance has not answered since ${outageClock(state.since)} (${state.cause}); trying every ${formatPlanDuration(state.retryMs)}`;
}

/** Creates the gate. Nothing runs until a request fails or `watch` is called. */
export function createOutageGate(opts: OutageGateOptions): OutageGate {
  const retryMs = Math.max(1, opts.retryMs ?? DEFAULT_OUTAGE_RETRY_MS);
  let down: { since: number; cause: string; told: boolean; deadline: number | null } | null = null;
  let probe: OutageProbe | null = null;
  let lastAnswer = opts.clock.now();
  /** The one probing loop of the outage in course, shared by every waiting request. */
  let waiting: Promise<void> | null = null;
  let probing = false;

  const snapshot = (): OutageState | null =>
    down ? { since: down.since, cause: down.cause, retryMs, deadline: down.deadline } : null;

  const tell = () => {
    if (!down || down.told) return;
    down.told = true;
    opts.listener?.down(snapshot()!);
  };

  const gate: OutageGate = {
    retryMs,
    waitMs: opts.waitMs,
    failed(cause, at) {
      if (down) down.cause = cause;
      else down = { since: at, cause, told: false, deadline: null };
    },
    answered(at) {
      lastAnswer = Math.max(lastAnswer, at);
      if (!down) return;
      const was = snapshot()!;
      const told = down.told;
      down = null;
      if (told) opts.listener?.up(was, at);
    },
    hold(cause, signal) {
      gate.failed(cause, opts.clock.now());
      const d = down!;
      d.deadline ??= opts.clock.now() + opts.waitMs;
      tell();
      if (!waiting) {
        waiting = loop().finally(() => {
          waiting = null;
        });
        // Each waiter handles the rejection; this keeps one whose waiters all left from going unhandled.
        waiting.catch(() => undefined);
      }
      return untilAborted(waiting, signal);
    },
    state: snapshot,
    setProbe(p) {
      probe = p;
    },
    watch(quietMs) {
      const timer = opts.clock.setInterval(() => {
        if (waiting || probing || !probe) return;
        if (!down && opts.clock.now() - lastAnswer < quietMs) return;
        probing = true;
        void ask()
          .then((cause) => {
            if (cause === null) return;
            gate.failed(cause, opts.clock.now());
            tell();
          })
          .finally(() => {
            probing = false;
          });
      }, retryMs);
      timer.unref();
      return { close: () => opts.clock.clearInterval(timer) };
    },
  };

  /** One probe; a probe that throws counts as no answer. */
  async function ask(signal?: AbortSignal): Promise<string | null> {
    if (!probe) return down?.cause ?? 'no answer';
    try {
      const cause = await probe(signal);
      if (cause === null) gate.answered(opts.clock.now());
      return cause;
    } catch (err) {
      if (signal?.aborted) throw err;
      return err instanceof Error ? err.message : String(err);
    }
  }

  /** Probes every retryMs until an answer (from the probe or any request) or the deadline. */
  async function loop(): Promise<void> {
    for (;;) {
      const d = down;
      if (!d) return;
      const left = (d.deadline ?? Infinity) - opts.clock.now();
      if (left <= 0) throw new InstanceOutageError(snapshot()!, opts.waitMs);
      await opts.clock.sleep(Math.min(retryMs, left), opts.signal);
      if (!down) return;
      const cause = await ask();
      if (cause === null) return;
      if (down) down.cause = cause;
    }
  }

  return gate;
}

/** `p`, or the signal's reason as soon as it is aborted (the shared loop goes on for the others). */
function untilAborted(p: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      },
    );
  });
}
