/**
 * The scheduling gate: how many moves may be in flight right now, below the operator's ceiling
 * (`move.concurrency`, or `shardmove control --concurrency`). Two parts, both optional:
 *
 * - **Windows** (`schedule:`): outside every window the cap is 0. Nothing new is scheduled, retries
 *   included; moves in flight are still polled to their end.
 * - **Throttle** (`throttle:`): additive increase, multiplicative decrease. A bad signal (a source
 *   or the destination unhealthy in `/-/readiness`, API latency above the threshold, too many failed
 *   moves or 429s, moves running much longer than the ones before) halves the cap at once (at most
 *   once per poll interval); an unhealthy storage pauses scheduling until it recovers. Each
 *   `increase_every` without a bad signal adds one, up to the ceiling.
 *
 * Every change is reported through `onChange` (the drain writes it as an audit event) with its
 * reason. The gate keeps no state in the checkpoint: after a restart the throttle starts again
 * from the ceiling and learns within a poll or two, and the windows are a function of the clock.
 */
import type { GateChangeData } from '../events/vocabulary.js';
import type { InstanceApi } from '../api/types.js';
import type { Plan } from '../plan/types.js';
import { nextChange, openWindow, parseWindow } from '../time/windows.js';
import { describeRule } from './rules.js';
import type { RuleState, RuleWatch } from './rules.js';
import type { Schedule } from '../time/windows.js';

/** The samples each signal is judged on. */
const SAMPLES = 50;

/** What the gate decided for this turn of the loop. */
export interface GateDecision {
  /** Moves allowed in flight (0: schedule nothing). */
  cap: number;
  /** What holds the cap under the ceiling: outside every window, a throttle rule, or the throttle (null: nothing does). */
  limit: 'window' | 'rule' | 'throttle' | null;
  /** Why the cap is below the ceiling (null when it is not). */
  reason: string | null;
  /** Outside every window: when the next one opens (ms since epoch), else null. */
  waitingUntil: number | null;
  /** A rule holds: the rule, and since when (ms since epoch). */
  rule?: { name: string; since: number | null };
}

/** A change of the gate, as the audit event of its type records it. */
export interface GateChange extends GateChangeData {
  type: 'window.opened' | 'window.closed' | 'throttle.cap';
}

export interface GateOptions {
  plan: Plan;
  api: InstanceApi;
  /** `run --ignore-schedule`: windows are reported but not enforced. */
  ignoreSchedule?: boolean;
  onChange?: (change: GateChange) => void;
  /** throttle.rules, read on Prometheus (absent: the plan has none). */
  rules?: RuleWatch;
  /** The throttle's latency p90 set live (`shardmove control --latency-p90`), read at each decision; undefined: the plan's. */
  latencyP90Ms?: () => number | undefined;
}

/** The gate one run shares across its drains. */
export interface SchedulingGate {
  /** The cap for now under `ceiling` (may read `/-/readiness`, at most once per `health_every`). */
  decide(ceiling: number, now: number): Promise<GateDecision>;
  /** A move ended: `durationMs` from when it was first seen in flight, when known. */
  noteMove(failed: boolean, durationMs: number | null): void;
  /** An HTTP answer (from the client's onResponse). */
  noteResponse(status: number | null | undefined, durationMs: number | undefined): void;
}

class Ring {
  private readonly values: number[] = [];
  constructor(private readonly size: number) {}
  push(v: number): void {
    this.values.push(v);
    if (this.values.length > this.size) this.values.shift();
  }
  get length(): number {
    return this.values.length;
  }
  quantile(q: number): number {
    const sorted = [...this.values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  }
  mean(): number {
    return this.values.length === 0 ? 0 : this.values.reduce((a, b) => a + b, 0) / this.values.length;
  }
  clear(): void {
    this.values.length = 0;
  }
}

/** The plan's windows, parsed (the loader has already checked them). */
export function scheduleOf(plan: Plan): Schedule | null {
  const s = plan.schedule;
  if (!s || s.windows.length === 0) return null;
  return { timezone: s.timezone, windows: s.windows.map(parseWindow) };
}

export function createGate(opts: GateOptions): SchedulingGate {
  const { plan, api } = opts;
  const schedule = scheduleOf(plan);
  const t = plan.throttle ?? null;
  const latency = new Ring(SAMPLES);
  const outcomes = new Ring(SAMPLES);
  const limited = new Ring(SAMPLES * 2);
  const firstDurations = new Ring(SAMPLES);
  const recentDurations = new Ring(Math.ceil(SAMPLES / 2));
  let cap: number | null = null;
  let lastCut = -Infinity;
  let lastGood = 0;
  let healthAt = -Infinity;
  let unhealthy: string | null = null;
  let windowOpen: boolean | null = null;
  let openText: string | null = null;
  let stateOpen = false;
  let stateFrom = 0;
  let stateUntil: number | null = null;
  const watched = new Set([...plan.move.from, ...plan.move.to]);

  async function readHealth(now: number): Promise<void> {
    if (!t || now - healthAt < t.healthEveryMs) return;
    healthAt = now;
    try {
      const r = await api.readiness();
      const bad = r.gitaly.filter((g) => watched.has(g.storage) && !g.ok).map((g) => g.storage);
      unhealthy = bad.length > 0 ? `Gitaly unhealthy in /-/readiness: ${bad.join(', ')}` : null;
    } catch (err) {
      // An unreadable probe is not a verdict on Gitaly; the other signals still apply.
      void err;
    }
  }

  /** The first bad signal, or null. */
  function badSignal(cut: RuleState | null): string | null {
    if (!t) return null;
    if (cut) return `${describeRule(cut)} (action: cut)`;
    if (latency.length >= 10) {
      const p90 = latency.quantile(0.9);
      const live = opts.latencyP90Ms?.();
      const bound = live ?? t.latencyP90Ms;
      if (p90 > bound)
        return `API latency p90 ${Math.round(p90)} ms above ${live === undefined ? 'throttle.latency_p90' : 'the latency p90 set with shardmove control'} ${bound} ms`;
    }
    if (outcomes.length >= 10 && outcomes.mean() > t.maxFailureRate) {
      return `${Math.round(outcomes.mean() * 100)}% of recent moves failed (throttle.max_failure_rate ${t.maxFailureRate})`;
    }
    if (limited.length >= 10 && limited.mean() > t.max429Rate) {
      return `${Math.round(limited.mean() * 100)}% of recent requests answered 429 (throttle.max_429_rate ${t.max429Rate})`;
    }
    if (firstDurations.length >= 10 && recentDurations.length >= 10) {
      const base = firstDurations.quantile(0.5);
      const now = recentDurations.quantile(0.5);
      if (base > 0 && now / base > t.durationDrift) {
        return `moves take ${(now / base).toFixed(1)}x as long as the first ones (throttle.duration_drift ${t.durationDrift}): Gitaly is slowing down`;
      }
    }
    return null;
  }

  return {
    async decide(ceiling, now) {
      const change = (c: GateChange) => opts.onChange?.(c);
      // Windows first: outside them nothing is scheduled, whatever the throttle says.
      if (schedule) {
        // The state holds until its next change: look the calendar up only when that has passed.
        if (windowOpen === null || stateUntil === null || now >= stateUntil || now < stateFrom) {
          stateFrom = now;
          stateUntil = nextChange(schedule, now) ?? Number.POSITIVE_INFINITY;
          stateOpen = openWindow(schedule, now) !== null;
        }
        const open = stateOpen;
        const nextOpensAt = open ? null : Number.isFinite(stateUntil) ? stateUntil : null;
        if (open !== windowOpen) {
          windowOpen = open;
          const closesAt = Number.isFinite(stateUntil) ? stateUntil : null;
          const closing = openText;
          openText = open ? (openWindow(schedule, now)?.text ?? null) : null;
          change(
            open
              ? {
                  type: 'window.opened',
                  cap: ceiling,
                  ceiling,
                  reason: opts.ignoreSchedule ? 'ignored (--ignore-schedule)' : null,
                  window: openText,
                  closesAt,
                }
              : {
                  type: 'window.closed',
                  cap: opts.ignoreSchedule ? ceiling : 0,
                  ceiling,
                  reason: opts.ignoreSchedule
                    ? 'outside every window, but --ignore-schedule'
                    : 'outside every maintenance window',
                  nextOpensAt,
                  window: closing,
                },
          );
        }
        if (!open && !opts.ignoreSchedule) {
          return { cap: 0, limit: 'window', reason: 'outside every maintenance window', waitingUntil: nextOpensAt };
        }
      }
      const verdict = opts.rules ? await opts.rules.evaluate(now) : null;
      if (verdict?.pause) {
        return {
          cap: 0,
          limit: 'rule',
          reason: pauseReason(verdict.pause),
          waitingUntil: null,
          rule: { name: verdict.pause.rule, since: verdict.pause.since },
        };
      }
      if (!t) {
        return { cap: ceiling, limit: null, reason: null, waitingUntil: null };
      }
      await readHealth(now);
      const before = cap ?? ceiling;
      let next = Math.min(before, ceiling);
      let reason: string | null = null;
      if (unhealthy) {
        next = 0;
        reason = `${unhealthy}: scheduling paused until it recovers`;
      } else {
        const bad = badSignal(verdict?.cut ?? null);
        if (bad) {
          reason = bad;
          if (now - lastCut >= plan.poll.intervalMs) {
            next = Math.max(1, Math.floor(before * t.decrease));
            lastCut = now;
            lastGood = now;
            // Judge the next cut on fresh evidence, not on what caused this one.
            latency.clear();
            outcomes.clear();
            limited.clear();
            recentDurations.clear();
          }
        } else {
          if (before === 0) next = 1;
          else if (now - lastGood >= t.increaseEveryMs && before < ceiling) {
            next = before + 1;
            lastGood = now;
          }
          if (next < ceiling)
            reason = `recovering: +1 every ${Math.round(t.increaseEveryMs / 1000)} s without a bad signal`;
        }
      }
      next = Math.max(0, Math.min(next, ceiling));
      if (cap === null) lastGood = now;
      if (next !== cap) change({ type: 'throttle.cap', cap: next, ceiling, reason: reason ?? 'at the ceiling' });
      cap = next;
      return {
        cap: next,
        limit: next < ceiling ? 'throttle' : null,
        reason: next < ceiling ? reason : null,
        waitingUntil: null,
      };
    },
    noteMove(failed, durationMs) {
      if (!t) return;
      outcomes.push(failed ? 1 : 0);
      if (!failed && durationMs !== null) {
        if (firstDurations.length < SAMPLES) firstDurations.push(durationMs);
        else recentDurations.push(durationMs);
      }
    },
    noteResponse(status, durationMs) {
      if (!t) return;
      if (typeof durationMs === 'number') latency.push(durationMs);
      limited.push(status === 429 ? 1 : 0);
    },
  };
}

/** Why a rule pauses the run, in words: the rule, its value and bound, or what failed. */
export function pauseReason(s: RuleState): string {
  if (s.status === 'error')
    return `Prometheus could not be read for rule ${s.rule}: ${s.error ?? 'the query failed'}; no new move until it answers (prometheus.on_error: pause)`;
  return `${describeRule(s)}: no new move while it holds`;
}
