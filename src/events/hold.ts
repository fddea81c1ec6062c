/**
 * What holds a run back right now, in the same words on the progress line of every command that
 * drives a drain (`run`, `revert`, `demo`) and in `status`: stopping (a stop from outside, by
 * `shardmove control --stop` or the stop file), paused (by an operator with `shardmove
 * control`, or by the failure breaker), held (by a throttle rule, by a destination's room, by the
 * throttle, by a bulk move's job still waiting in Sidekiq's queue, by the instance's application
 * rate limit until its window ends), waiting for a maintenance window, held by an instance that
 * does not answer, or running under a lower cap. Pure: read from the
 * checkpoint's live control and the run's last recorded cap.
 */
import type { CapData, RunControl, StopBy } from './vocabulary.js';
import { formatClockTime, formatWindowTime } from '../time/windows.js';
import { roomBrief, roomOfRecorded } from './room-words.js';

/** Who or what holds a paused run (said in words below, on the progress line and in `status`; `run.paused`'s `by`). */
export const PAUSE_HOLDERS = [
  'control',
  'breaker',
  'rule',
  'capacity',
  'window',
  'throttle',
  'queue',
  'ratelimit',
  'outage',
] as const;

/** Everything that may hold the run: the pause holders, and `stop`, a stop from outside (control --stop, the stop file) that ends it. */
export const HOLDERS = [...PAUSE_HOLDERS, 'stop'] as const;
export type HoldBy = (typeof HOLDERS)[number];

export interface Hold {
  by: HoldBy;
  /** True when nothing new is scheduled (cap 0): PAUSED, HELD or WAITING. False: a lower cap. */
  stopped: boolean;
  /** Everything in a few words: "PAUSED by the failure breaker", "cap 3 of 10 (throttle)". */
  full: string;
  /** The shortest form that still says who: "PAUSED (breaker)", "cap 3/10". */
  short: string;
  /** Why, when there is more to say than `full` (a rule's value, the breaker's count); null otherwise. */
  detail: string | null;
  /** `detail` in fewer words for a narrow line; absent: `detail` without PromQL label sets. */
  brief?: string | null;
  /** How loud a terminal shows it: the breaker is an alarm, a pause or a hold a warning, a window or a cap a note. */
  tone: 'alarm' | 'warn' | 'note';
}

/** The prefix the failure breaker writes into the control row's reason (src/actors/breaker.ts). */
export const BREAKER_PREFIX = 'paused by the failure breaker';

/** The reason a pause clicked in the web console (`shardmove serve`) writes into the control row. */
export const CONSOLE_PAUSE = 'paused from the console (shardmove serve)';

/** Who asked for a stop, in words: the stop file, `shardmove control --stop`, or the web console. */
export function stopByWords(by: StopBy | null): string | null {
  return by === 'file'
    ? 'the stop file'
    : by === 'control'
      ? 'shardmove control'
      : by === 'console'
        ? 'the console'
        : null;
}

/** Who asked for a stop, naming the command when it was `shardmove control --stop` (the reports' and control's words). */
export function stopAskedBy(by: StopBy): string {
  return by === 'control' ? 'shardmove control --stop' : (stopByWords(by) ?? 'the stop file');
}

/**
 * The hold in force, or null when the run goes at the plan's cap. `control` wins for the pause (it
 * is read live, before the drain's next turn records it); the recorded cap says the rest. A cap
 * that still says "paused" after an unpause is stale (the drain has not turned yet) and ignored.
 */
export function holdOf(cap: CapData | null, control: RunControl | null, timezone = 'UTC'): Hold | null {
  // A stop ends the run: it says so above a pause, a hold or a window, whatever else holds.
  const stop = control ? (control.stop ?? null) : cap?.limit === 'stopping' ? { by: null } : null;
  if (stop) {
    const by = stopByWords(stop.by);
    return {
      by: 'stop',
      stopped: true,
      full: by ? `STOPPING by ${by}` : 'STOPPING',
      short: 'STOPPING',
      detail: 'no new move; it exits once none is in flight',
      tone: 'warn',
    };
  }
  const paused = control ? control.paused : cap?.limit === 'paused';
  if (paused) {
    // The live control says who paused it now: an operator's pause over the breaker's is the operator's.
    const reason = control ? (control.pausedBy ?? null) : (cap?.reason ?? null);
    if (reason?.startsWith(BREAKER_PREFIX)) {
      const why = /^paused by the failure breaker: (\d+ moves? failed within \S+)/.exec(reason)?.[1] ?? null;
      return {
        by: 'breaker',
        stopped: true,
        full: 'PAUSED by the failure breaker',
        short: 'PAUSED (breaker)',
        detail: why,
        tone: 'alarm',
      };
    }
    return {
      by: 'control',
      stopped: true,
      full: reason === CONSOLE_PAUSE ? 'PAUSED by the console' : 'PAUSED by shardmove control',
      short: 'PAUSED',
      // A paused run still watches the instance: an outage meanwhile is said beside the pause.
      detail: cap?.limit === 'outage' ? cap.reason : null,
      tone: 'warn',
    };
  }
  if (!cap) return null;
  // A window or the throttle that leaves some moves going is a lower cap; at 0 it holds the run.
  if ((cap.limit === 'window' || cap.limit === 'throttle') && cap.cap > 0) return lowerCap(cap, cap.limit);
  switch (cap.limit) {
    case 'plan':
    case 'paused':
    case 'stopping':
      return null;
    case 'control':
      return {
        by: 'control',
        stopped: false,
        full: `cap ${cap.cap} (shardmove control)`,
        short: `cap ${cap.cap}`,
        detail: null,
        tone: 'note',
      };
    case 'window':
      return {
        by: 'window',
        stopped: true,
        full:
          cap.until != null
            ? `WAITING for the window at ${formatWindowTime(cap.until, timezone)}`
            : 'WAITING: no window opens',
        short: 'WAITING (window)',
        detail: null,
        tone: 'note',
      };
    case 'rule': {
      const name = cap.rule ?? 'a throttle rule';
      // capacity:<storage> is the destination's room, watched as a pause rule (runtime/run.ts).
      const capacity = name.startsWith('capacity:');
      return {
        by: capacity ? 'capacity' : 'rule',
        stopped: true,
        full: capacity ? `HELD: no room on ${name.slice('capacity:'.length)}` : `HELD by rule ${name}`,
        short: capacity ? 'HELD (room)' : `HELD (${name})`,
        // A reason recorded before the room was said in bytes is said in bytes now.
        detail: capacity ? roomOfRecorded(ruleDetail(cap.reason)) : ruleDetail(cap.reason),
        ...(capacity ? { brief: roomBrief(roomOfRecorded(ruleDetail(cap.reason))) } : {}),
        tone: 'warn',
      };
    }
    case 'queue':
      return {
        by: 'queue',
        stopped: true,
        full: "HELD: the bulk move's job waits in Sidekiq's queue",
        short: 'HELD (queue)',
        detail: cap.reason,
        tone: 'note',
      };
    case 'ratelimit':
      return {
        by: 'ratelimit',
        stopped: true,
        full:
          cap.until != null
            ? `HELD by the instance's rate limit until ${formatClockTime(cap.until, timezone)}`
            : "HELD by the instance's rate limit",
        short: cap.until != null ? `HELD (rate limit) to ${formatClockTime(cap.until, timezone)}` : 'HELD (rate limit)',
        detail: cap.reason,
        tone: 'warn',
      };
    case 'outage':
      return {
        by: 'outage',
        stopped: true,
        full: `HELD: ${cap.reason}`,
        short: 'HELD (outage)',
        detail: null,
        tone: 'alarm',
      };
    case 'throttle':
      return {
        by: 'throttle',
        stopped: true,
        full: 'HELD by the throttle',
        short: 'HELD',
        detail: cap.reason,
        tone: 'warn',
      };
  }
}

function lowerCap(cap: CapData, by: 'window' | 'throttle'): Hold {
  return {
    by,
    stopped: false,
    full: `cap ${cap.cap} of ${cap.ceiling} (${by})`,
    short: `cap ${cap.cap}/${cap.ceiling}`,
    detail: cap.reason,
    // What was measured, without the bound it passed: "API latency p90 2.1 s".
    brief: cap.reason.replace(/ (?:above|below) .*$/, ''),
    tone: 'note',
  };
}

/** A rule's reason without what the hold already says ("no new move while it holds"). */
function ruleDetail(reason: string): string {
  return reason.replace(/: no new move while it holds$/, '').replace(/^rule \S+: /, '');
}

/** The words every `move.concurrency: auto` change of the cap starts with (src/actors/auto-cap.ts). */
export const AUTO_PREFIX = 'auto: ';

/** The cap `move.concurrency: auto` chose and why, in a few words for a line and whole. */
export interface AutoCapView {
  cap: number;
  /** The limiter's last reason, without its `auto: ` prefix ("throughput flat at 8, 12 moved slower"). */
  reason: string;
}

/**
 * The limiter's cap when it is the cap in force (a recorded cap of the plan's with an `auto:`
 * reason), else null: a pin, a pause, a window or a rule says more and is the hold's to show.
 */
export function autoCapOf(cap: CapData | null): AutoCapView | null {
  if (!cap || cap.limit !== 'plan' || !cap.reason.startsWith(AUTO_PREFIX)) return null;
  return { cap: cap.cap, reason: cap.reason.slice(AUTO_PREFIX.length) };
}
