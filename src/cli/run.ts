/**
 * `shardmove run PLAN [--state FILE] [--dry-run [--items FILE]] [--only FILE] [--items-format jsonl|csv]
 * [--force] [--accept-plan-change] [--retry-quarantined] [--ignore-schedule] [--events FILE|-] [--lease DURATION]
 * [--metrics-file PATH]`: runs or resumes
 * the plan, prints the final report and maps the run's outcome to an exit code:
 * 0 done and verified, 1 failed, 2 invalid plan, 3 done with quarantined items,
 * 4 refused (lock held, plan changed), 5 lost the run lock to another runner, 6 stopped on request
 * (`control --stop`, the stop file), 7 the instance did not answer for instance.outage_wait,
 * 130 interrupted with the checkpoint saved.
 */
import { resolve } from 'node:path';
import { FOREIGN_MOVES, SELECT_UNKNOWN, SELECT_UNLISTABLE } from '../actors/errors.js';
import { INSTANCE_OUTAGE } from '../api/errors.js';
import { createMetricsFileObserver } from '../metrics/metrics-file.js';
import { claimMetricsFile } from '../metrics/owner.js';
import type { MetricsClaim } from '../metrics/owner.js';
import { renderFinalReport, renderStoppedReport } from '../report/final.js';
import { formatPlanDuration, parseDuration } from '../time/durations.js';
import { LEASE_RANGE_MS } from '../runtime/ownership/lease.js';
import type { Notifier } from '../notify/worker.js';
import type { RunEvents } from '../runtime/observe/event-sink.js';
import type { RunObserver } from '../runtime/observe/observer.js';
import { executeOnly } from '../runtime/lists/only.js';
import { executeRun } from '../runtime/run.js';
import type { Precheck } from '../runtime/precheck/precheck.js';
import type { FinalState, RunEnd, RunOutcome } from '../runtime/types.js';
import type { CommandContext, ExitCode } from './context.js';
import { EXIT, FLAG_DEFAULTS, processOf, textWidth } from './context.js';
import { shellWord } from './command-line.js';
import { ArgsError } from './errors.js';
import { withRunEvents } from './events-file.js';
import { createRunNotifier, sayUndelivered } from './notify.js';
import { refuseRunOutputsThatAreInputs } from './outputs.js';
import type { RunOutputsPlace } from './outputs.js';
import { createProgress } from './progress.js';
import { afterDryRun, afterOnlyRun, checkItemFlags, parseItemsFormat, refuseExistingList } from './run-items.js';

/** Exit codes of a run that got as far as the machine (README: Exit codes). */
const EXIT_BY_STATE: Record<FinalState, ExitCode> = {
  done: EXIT.ok,
  doneWithQuarantine: EXIT.quarantined,
  failed: EXIT.failed,
};

export async function runRunCommand(opts: RunFlags, ctx: CommandContext): Promise<number> {
  if (opts.retryQuarantined && opts.dryRun) {
    throw new ArgsError('run: --retry-quarantined changes the checkpoint; a --dry-run never does. Give one of them');
  }
  if (opts.detailedExitcode && !opts.dryRun)
    throw new ArgsError(
      'run: --detailed-exitcode tells how a --dry-run came out (0 would go, 2 would not fit or be refused): add --dry-run',
    );
  const leaseMs = parseLease(opts.lease);
  const itemsFormat = checkItemFlags(opts, ctx);
  const place = await refuseRunOutputsThatAreInputs('run', opts, ctx);
  refuseExistingList(opts, ctx);
  const metrics = claimRunMetricsFile(opts, place, ctx);
  const notifier = createRunNotifier(opts.plan, ctx, exitCodeOfOutcome);
  try {
    // With events on standard output, the progress line and the report go to standard error.
    return await withRunEvents(
      opts,
      ctx,
      (events, human) => startRun(opts, leaseMs, events, human, notifier),
      (outcome, human) => {
        let code = reportOutcome(outcome, human, { again: runCommand(opts), plan: opts.plan });
        if (opts.detailedExitcode) code = detailedExitCode(outcome, code);
        if (opts.only !== undefined) afterOnlyRun(outcome, human);
        if (opts.items !== undefined && itemsFormat)
          code = afterDryRun(outcome, opts.items, itemsFormat, code, human, opts.force);
        sayUndelivered(notifier.left, human);
        return code;
      },
      (outcome) => outcome,
    );
  } catch (err) {
    sayUndelivered(notifier.left, ctx);
    throw err;
  } finally {
    metrics.release();
  }
}

/**
 * Makes this run the keeper of its --metrics-file for as long as it goes on (src/metrics/owner.ts):
 * refused (exit 4) while another live run keeps it. Nothing to keep without the flag.
 */
export function claimRunMetricsFile(
  flags: { plan: string; metricsFile?: string | undefined },
  place: RunOutputsPlace,
  ctx: CommandContext,
): MetricsClaim {
  if (!flags.metricsFile) return { release: () => undefined };
  const planFile = resolve(ctx.cwd, flags.plan);
  return claimMetricsFile(
    resolve(ctx.cwd, flags.metricsFile),
    { plan: place.planName ?? planFile, planFile, checkpoint: place.checkpoint },
    {
      flag: flags.metricsFile,
      onTakeover: (stale) =>
        ctx.stderr.write(
          `note: --metrics-file: took over ${flags.metricsFile} from a run that is gone (plan ${stale.plan}, pid ${stale.pid}, since ${stale.startedAt})\n`,
        ),
      onError: (err) =>
        ctx.stderr.write(
          `warning: --metrics-file: cannot record this run as the keeper of ${flags.metricsFile}: ${err instanceof Error ? err.message : String(err)}\n`,
        ),
    },
  );
}

/**
 * The command that continues this run as it was started: the plan, its checkpoint, the dry run,
 * the reviewed list it applies or writes, and the outputs it feeds (--events, --metrics-file), so
 * that the run that continues is the same run and its watchers keep getting it. The one-off flags
 * (--accept-plan-change, --retry-quarantined) are left out: the checkpoint has taken them.
 */
export function runCommand(
  f: Pick<
    RunFlags,
    | 'plan'
    | 'state'
    | 'dryRun'
    | 'items'
    | 'force'
    | 'only'
    | 'itemsFormat'
    | 'ignoreSchedule'
    | 'acceptForeignMoves'
    | 'detailedExitcode'
    | 'lease'
    | 'events'
    | 'eventsInterval'
    | 'metricsFile'
  >,
): string {
  const words = ['shardmove', 'run', shellWord(f.plan)];
  if (f.state) words.push('--state', shellWord(f.state));
  if (f.dryRun) words.push('--dry-run');
  if (f.items !== undefined) words.push('--items', shellWord(f.items));
  // A list the operator let this dry run replace: the run that continues it may replace it too.
  if (f.force) words.push('--force');
  if (f.only !== undefined) words.push('--only', shellWord(f.only));
  if (f.itemsFormat !== undefined) words.push('--items-format', shellWord(f.itemsFormat));
  if (f.ignoreSchedule) words.push('--ignore-schedule');
  // The operator let this run go on beside moves it did not schedule: the run that continues meets them too.
  if (f.acceptForeignMoves) words.push('--accept-foreign-moves');
  if (f.detailedExitcode) words.push('--detailed-exitcode');
  if (f.lease !== undefined && f.lease !== FLAG_DEFAULTS.lease) words.push('--lease', shellWord(f.lease));
  // `-` is standard output, not a file named "-": it stays as written.
  if (f.events !== undefined) words.push('--events', f.events === '-' ? '-' : shellWord(f.events));
  if (f.eventsInterval !== undefined && f.eventsInterval !== FLAG_DEFAULTS.eventsInterval)
    words.push('--events-interval', shellWord(f.eventsInterval));
  if (f.metricsFile !== undefined) words.push('--metrics-file', shellWord(f.metricsFile));
  return words.join(' ');
}

/**
 * The observers of a run (`run`, `revert`): its progress line, its --events target and its
 * --metrics-file, which watch the run the same way, as observers of its checkpoint.
 */
export function runObservers(
  events: RunEvents | undefined,
  metricsFile: string | undefined,
  ctx: CommandContext,
  what: 'run' | 'revert',
): RunObserver[] {
  const observers: RunObserver[] = [createProgress(ctx)];
  if (events) observers.push(events);
  if (metricsFile) {
    observers.push(
      createMetricsFileObserver(resolve(ctx.cwd, metricsFile), {
        onError: (err) =>
          ctx.stderr.write(
            `warning: --metrics-file: cannot write ${metricsFile}: ${err instanceof Error ? err.message : String(err)} (the ${what} goes on)\n`,
          ),
        onWarning: (message) => ctx.stderr.write(`warning: --metrics-file: ${message}\n`),
        command: what,
      }),
    );
  }
  return observers;
}

/** `run`'s options as commander parses them. */
type RunFlags = {
  plan: string;
  state?: string;
  dryRun: boolean;
  acceptPlanChange: boolean;
  retryQuarantined: boolean;
  ignoreSchedule?: boolean;
  /** `--accept-foreign-moves`: start beside moves in flight on the sources that this checkpoint did not schedule. */
  acceptForeignMoves?: boolean;
  /** `--dry-run --detailed-exitcode`: 2 when the run would not fit or be refused. */
  detailedExitcode?: boolean;
  lease?: string;
  events?: string;
  eventsInterval?: string;
  metricsFile?: string;
  /** `--dry-run --items FILE`: write the list the dry run would move. */
  items?: string;
  /** `--only FILE`: move exactly the items of a reviewed list. */
  only?: string;
  itemsFormat?: string;
  /** `--force`: with --dry-run --items, replace a list that exists. */
  force?: boolean;
  /** The checkpoint's whole-file check, started by main before this module loaded. */
  precheck?: Promise<Precheck | null>;
};

function startRun(
  opts: RunFlags,
  leaseMs: number | undefined,
  events: RunEvents | undefined,
  ctx: CommandContext,
  notifier: Notifier,
): Promise<RunOutcome> {
  const observers = [...runObservers(events, opts.metricsFile, ctx, 'run'), notifier];
  const options = {
    planFile: opts.plan,
    statePath: opts.state,
    dryRun: opts.dryRun,
    acceptPlanChange: opts.acceptPlanChange,
    retryQuarantined: opts.retryQuarantined,
    ignoreSchedule: opts.ignoreSchedule ?? false,
    ...(opts.acceptForeignMoves ? { acceptForeignMoves: true } : {}),
    leaseMs,
    ...processOf(ctx),
    observers,
    onEnd: (end: RunEnd) => notifier.ended(end),
    ...(opts.precheck ? { precheck: opts.precheck } : {}),
  };
  // The clock of the command's context (a test's simulated one), else the runtime's own.
  const clock = ctx.clock ? { clock: ctx.clock } : {};
  if (opts.only !== undefined)
    return executeOnly({ ...options, onlyFile: opts.only, format: parseItemsFormat(opts.itemsFormat) }, clock);
  return executeRun(options, clock);
}

/** `--lease`: a plan duration within LEASE_RANGE_MS; absent means the default. */
export function parseLease(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const d = parseDuration(raw);
  const { min, max } = LEASE_RANGE_MS;
  if (!d.ok) throw new ArgsError(`run: --lease "${raw}": ${d.reason}`);
  if (d.ms < min || d.ms > max)
    throw new ArgsError(
      `run: --lease must be from ${formatPlanDuration(min)} to ${formatPlanDuration(max)}; got "${raw}"`,
    );
  return d.ms;
}

/**
 * `run --dry-run --detailed-exitcode` (as `terraform plan -detailed-exitcode`): a finished dry run
 * is 0 when the real run would fit and go, 2 when it would not fit or would be refused (what its
 * report lists under "A real run would be refused"); any other end keeps its own code.
 */
export function detailedExitCode(outcome: RunOutcome, code: ExitCode): ExitCode {
  if (outcome.kind !== 'final' || outcome.state === 'failed' || !outcome.report.context.dryRun) return code;
  return (outcome.report.context.wouldRefuse ?? []).length > 0 ? EXIT.invalid : code;
}

/**
 * What Ctrl-C or a hangup leaves: the checkpoint saved, and the moves already posted still running
 * on GitLab (an interruption cannot call them back), their repositories read-only until each ends;
 * `next` says how to go on, which follows them.
 */
export function interruptedLine(inFlight: number | undefined, next: string): string {
  const line = `interrupted; ${next}\n`;
  if (!inFlight) return line;
  const moves =
    inFlight === 1
      ? '1 move is still running on GitLab (its repository read-only until it ends)'
      : `${inFlight} moves are still running on GitLab (their repositories read-only until each ends)`;
  return `${moves}; an interruption cannot call them back, and going on follows them\n${line}`;
}

/** The exit code of a run's outcome (README: Exit codes). */
export function exitCodeOfOutcome(outcome: RunOutcome): ExitCode {
  if (outcome.kind === 'interrupted') return EXIT.interrupted;
  if (outcome.kind === 'stopped') return EXIT.stopped;
  const code = outcome.report.context.error?.code;
  if (outcome.state === 'failed' && code && code in EXIT_BY_STEP_CODE) return EXIT_BY_STEP_CODE[code]!;
  return EXIT_BY_STATE[outcome.state];
}

/**
 * Prints how the run ended (the final report, or how to continue) and returns its exit code;
 * `again` is the command that continues it and `plan` the plan file as named, for every hint that
 * tells the operator what to type.
 */
export function reportOutcome(
  outcome: RunOutcome,
  out: Pick<CommandContext, 'stdout' | 'stderr'>,
  hints: { again?: string; plan?: string } = {},
): ExitCode {
  const { again } = hints;
  const named = {
    ...(again ? { again } : {}),
    ...(hints.plan !== undefined ? { plan: hints.plan } : {}),
    width: textWidth(out.stdout),
  };
  if (outcome.kind === 'interrupted')
    out.stderr.write(interruptedLine(outcome.inFlight, again ? `to continue: ${again}` : 'run again to continue'));
  // Scrubbed before the wrapping too (a secret with a space must not be split), and after it as before.
  else if (outcome.kind === 'stopped')
    out.stdout.write(outcome.redact(renderStoppedReport({ ...outcome.report, ...named, scrub: outcome.redact })));
  else out.stdout.write(outcome.redact(renderFinalReport({ ...outcome.report, ...named, scrub: outcome.redact })));
  return exitCodeOfOutcome(outcome);
}

/**
 * Failures of a step that are the plan's, not the run's: `move.select` names the instance does not
 * have, or a kind it cannot choose from. Refused like a plan problem (2), before any write.
 */
const EXIT_BY_STEP_CODE: Readonly<Record<string, ExitCode>> = {
  [SELECT_UNKNOWN]: EXIT.invalid,
  [SELECT_UNLISTABLE]: EXIT.invalid,
  // Moves of another drain in flight on the sources: refused before any write, as a second run's lock is.
  [FOREIGN_MOVES]: EXIT.refused,
  // The instance did not answer for instance.outage_wait: its own code, so a restart loop can tell it from a revoked token.
  [INSTANCE_OUTAGE]: EXIT.outage,
};
