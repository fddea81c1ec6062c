/**
 * Where `run --events` writes: a file, appended to with one write(2) per line (so `tail -f` and
 * other readers never see half a line, and an earlier run's lines stay), or standard output for
 * `-`. Also the run's last events: a lost lease, and how it ended with the exit code the process is
 * about to return.
 */
import { closeSync, writeSync } from 'node:fs';
import { openForAppend } from '../files/append.js';
import { resolve } from 'node:path';
import { codeOf } from '../shared/errors.js';
import { parseDuration, formatPlanDuration } from '../time/durations.js';
import { redact } from '../plan/secrets.js';
import { createRunEvents } from '../runtime/observe/event-sink.js';
import type { RunEvents } from '../runtime/observe/event-sink.js';
import type { RUN_OUTCOMES, RunEventBody, RunEventBodyOf } from '../events/run-events.js';
import type { RunOutcome } from '../runtime/types.js';
import { LeaseLostError } from '../store/errors.js';
import { systemClock } from '../shared/clock.js';
import type { CommandContext } from './context.js';
import { EXIT, FLAG_DEFAULTS } from './context.js';
import { ArgsError } from './errors.js';
import { exitCodeOf } from './exit-codes.js';

/** Bounds of `--events-interval`. */
const INTERVAL_RANGE_MS = { min: 1_000, max: 3_600_000 } as const;

export interface EventsTarget {
  events: RunEvents;
  close(): void;
}

/** `--events-interval`: how often a progress event is written. */
export function parseEventsInterval(raw: string): number {
  const d = parseDuration(raw);
  const { min, max } = INTERVAL_RANGE_MS;
  if (!d.ok) throw new ArgsError(`run: --events-interval "${raw}": ${d.reason}`);
  if (d.ms < min || d.ms > max)
    throw new ArgsError(
      `run: --events-interval must be from ${formatPlanDuration(min)} to ${formatPlanDuration(max)}; got "${raw}"`,
    );
  return d.ms;
}

/**
 * Opens `--events FILE|-`; a file that cannot be opened for appending is refused (exit 2), and so is
 * anything but a regular file (src/files/append.ts), judged on the opened file itself, so nothing
 * put at the name after the command's first check is written to: a stream is `--events -`.
 */
export function openEvents(target: string, progressMs: number, ctx: CommandContext): EventsTarget {
  if (target === '-')
    return {
      events: createRunEvents((line) => ctx.stdout.write(line), ctx.clock ?? systemClock, progressMs),
      close: () => undefined,
    };
  const file = resolve(ctx.cwd, target);
  const opened = openForAppend(file, 0o640);
  if ('error' in opened)
    throw new ArgsError(`run: --events ${target}: cannot open it for appending (${opened.error.message})`);
  if ('refused' in opened)
    throw new ArgsError(
      `run: --events ${target} is ${opened.refused}; shardmove appends only to a regular file, or writes to standard output for -`,
    );
  const { fd } = opened;
  return {
    events: createRunEvents((line) => writeSync(fd, line), ctx.clock ?? systemClock, progressMs),
    close: () => closeSync(fd),
  };
}

type Outcome = (typeof RUN_OUTCOMES)[number];

/** The last event of a run that returned an outcome (`run --events` and the notifications say it alike). */
export function finishedOfOutcome(outcome: RunOutcome, exitCode: number): RunEventBodyOf<'run.finished'> {
  if (outcome.kind === 'interrupted' || outcome.kind === 'stopped')
    return { type: 'run.finished', outcome: outcome.kind, exitCode, error: null, quarantined: null };
  const e = outcome.report.context.error;
  return {
    type: 'run.finished',
    outcome: outcome.state,
    exitCode,
    error: e ? { code: e.code, message: outcome.redact(e.message) } : null,
    quarantined: outcome.report.summary.quarantined.length,
  };
}

/**
 * The last events of a run that threw (refused, invalid, lost its lease, failed before the
 * machine): `lease.lost` first when it lost its lease, which the checkpoint's log cannot say (this
 * process may no longer write there), then `run.finished` with the exit code.
 */
export function finishedOfError(err: unknown, redact: (s: string) => string): RunEventBody[] {
  const exitCode = exitCodeOf(err);
  const code = codeOf(err) ?? '';
  const byExit: Partial<Record<number, Outcome>> = {
    [EXIT.invalid]: 'invalid',
    [EXIT.refused]: 'refused',
    [EXIT.leaseLost]: 'leaseLost',
  };
  const outcome: Outcome = byExit[exitCode] ?? (code.startsWith('SHARDMOVE_') ? 'failed' : 'error');
  const lost: RunEventBody[] =
    err instanceof LeaseLostError
      ? [{ type: 'lease.lost', holder: err.holder ? { pid: err.holder.pid, host: err.holder.host } : null }]
      : [];
  return [
    ...lost,
    {
      type: 'run.finished',
      outcome,
      exitCode,
      error: { code: code || 'SHARDMOVE_INTERNAL', message: redact(err instanceof Error ? err.message : String(err)) },
      quarantined: null,
    },
  ];
}

/** The final event of a run that returned an outcome. */
export function finishWithOutcome(events: RunEvents, outcome: RunOutcome, exitCode: number): void {
  events.finish(finishedOfOutcome(outcome, exitCode));
}

/** The final events of a run that threw; returns its exit code. */
export function finishWithError(events: RunEvents, err: unknown, redact: (s: string) => string): number {
  for (const body of finishedOfError(err, redact)) {
    if (body.type === 'lease.lost') events.leaseLost(body.holder);
    else if (body.type === 'run.finished') events.finish(body);
  }
  return exitCodeOf(err);
}

/**
 * Runs a command that drives a run (`run`, `revert`) with its `--events` target, if any: the human
 * output moves to standard error when the events take standard output, and the last event says how
 * the run ended (`outcomeOf` gives the run's outcome, or null when no run took place), or what it
 * threw.
 */
export async function withRunEvents<T>(
  flags: { events?: string | undefined; eventsInterval?: string | undefined },
  ctx: CommandContext,
  start: (events: RunEvents | undefined, human: CommandContext) => Promise<T>,
  finish: (outcome: T, human: CommandContext) => number,
  outcomeOf: (outcome: T) => RunOutcome | null,
): Promise<number> {
  const progressMs = parseEventsInterval(flags.eventsInterval ?? FLAG_DEFAULTS.eventsInterval);
  if (!flags.events) return finish(await start(undefined, ctx), ctx);
  const human = flags.events === '-' ? { ...ctx, stdout: ctx.stderr } : ctx;
  const target = openEvents(flags.events, progressMs, ctx);
  try {
    let outcome: T;
    try {
      outcome = await start(target.events, human);
    } catch (err) {
      finishWithError(target.events, err, redact);
      throw err;
    }
    const code = finish(outcome, human);
    const ran = outcomeOf(outcome);
    if (ran) finishWithOutcome(target.events, ran, code);
    if (target.events.failure)
      ctx.stderr.write(`warning: --events: writing stopped: ${target.events.failure.message}\n`);
    return code;
  } finally {
    target.close();
  }
}
