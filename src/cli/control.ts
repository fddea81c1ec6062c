/**
 * `shardmove control PLAN [--state FILE] [--concurrency N|plan] [--pause | --unpause | --stop]
 * [--breaker B|off|plan] [--rule NAME --above X|--below X] [--latency-p90 D|plan]`:
 * steers a run while it goes on. The overrides live in the checkpoint; the running process picks
 * them up within one poll interval, and a later `run` of the same checkpoint keeps them. It says
 * what it did in words ("paused", "unpaused: cap back to the plan's 10"); without options, what is
 * in force. `--stop` ends the run: no new moves, the moves in flight followed to their end, then it
 * exits with 6, and `run` again continues it (../runtime/control/stop.ts). `--json` gives the overrides with
 * numbers: the plan's cap, the cap now and once unpaused. The thresholds (the failure breaker, a
 * throttle rule's bound, the throttle's latency p90) change live too, each audited with who changed
 * it (./control-thresholds.ts, ../runtime/control/thresholds-control.ts). Exit 0 when read or written; 1
 * when there is no checkpoint; 2 for invalid options, or a threshold the run's plan refuses.
 */
import { hostname, userInfo } from 'node:os';
import { stopAskedBy } from '../events/hold.js';
import { applyControl } from '../runtime/control/control.js';
import type { ControlChange, ControlResult, StopAnswer } from '../runtime/control/control.js';
import { stopFilePath } from '../runtime/control/stop.js';
import { NO_CHECKPOINT } from '../runtime/errors.js';
import { systemClock } from '../shared/clock.js';
import { RANGES } from '../plan/rules.js';
import { capWhenUnpaused, describeChange } from '../report/control-words.js';
import { describeThresholdChange, describeThresholdInForce } from '../report/threshold-words.js';
import type { ThresholdBy } from '../store/thresholds.js';
import { hasThresholdOptions, parseThresholdChanges } from './control-thresholds.js';
import type { ThresholdOptions } from './control-thresholds.js';
import type { ControlView } from '../report/control-words.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';
import { ArgsError } from './errors.js';
import { readPlanGiven } from './plan-given.js';
import { resolveRunCheckpoint } from './plan-identity.js';

export interface ControlOptions extends ThresholdOptions {
  plan: string;
  state?: string;
  concurrency?: string;
  pause: boolean;
  unpause: boolean;
  stop?: boolean;
  json: boolean;
}

/** Parses the options into a change (pure); throws SHARDMOVE_ARGS_INVALID naming the problem. */
export function parseControlChange(
  opts: Pick<ControlOptions, 'concurrency' | 'pause' | 'unpause' | 'stop'> & ThresholdOptions,
): ControlChange {
  if (opts.stop) {
    // A stop ends the run: a cap or a pause given with it would only hold for the next run, unasked.
    if (opts.pause || opts.unpause || opts.concurrency !== undefined || hasThresholdOptions(opts))
      throw new ArgsError(
        'control: --stop takes no --pause, --unpause, --concurrency, --breaker, --rule or --latency-p90; give it alone',
      );
    return { stop: true };
  }
  if (opts.pause && opts.unpause) throw new ArgsError('control: --pause and --unpause together; give one');
  const change: ControlChange = {};
  if (opts.pause) change.paused = true;
  if (opts.unpause) change.paused = false;
  if (opts.concurrency !== undefined) {
    const raw = opts.concurrency.trim();
    const { min, max } = RANGES.concurrency;
    // `auto` hands a pinned cap back to the plan's: its limiter under `move.concurrency: auto`.
    if (raw === 'plan' || raw === 'auto') change.concurrency = null;
    else if (/^\d+$/.test(raw) && Number(raw) >= min && Number(raw) <= max) change.concurrency = Number(raw);
    else
      throw new ArgsError(
        `control: --concurrency must be a whole number from ${min} to ${max}, or "plan" (or "auto") for the plan's own; got "${raw}"`,
      );
  }
  return change;
}

/** Who changes a threshold: this user, host and process (never a secret: no token, no argv). */
function whoAmI(): ThresholdBy {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for this uid (a container): the uid alone still tells who.
    user = `uid ${process.getuid?.() ?? '?'}`;
  }
  return { user, host: hostname(), pid: process.pid };
}

export async function runControlCommand(opts: ControlOptions, ctx: CommandContext): Promise<number> {
  const change = parseControlChange(opts);
  const thresholds = parseThresholdChanges(opts);
  if (thresholds.length > 0) change.thresholds = { changes: thresholds, by: whoAmI() };
  const { file } = await resolveRunCheckpoint(opts, ctx);
  let result;
  try {
    result = applyControl(file, change, (ctx.clock ?? systemClock).now(), await readPlanGiven(opts.plan, ctx));
  } catch (err) {
    if ((err as { code?: unknown }).code === NO_CHECKPOINT) {
      ctx.stderr.write(`shardmove control: ${(err as Error).message}\n`);
      return EXIT.failed;
    }
    throw err;
  }
  if (result.refused.length > 0) throw new ArgsError(`control: ${result.refused.join('; ')}; nothing was changed`);
  const view: ControlView = { ...result.control, planConcurrency: result.planConcurrency };
  if (result.stop) return reportStop(result, file, opts, ctx);
  const { thresholds: _t, ...capChange } = change;
  const capAsked = Object.keys(capChange).length > 0;
  const saidThresholds = result.thresholds.map((d) => describeThresholdChange(d));
  const said = [
    ...(capAsked || saidThresholds.length === 0 ? [describeChange(capChange, result.before, view)] : []),
    ...saidThresholds,
  ].join('\n');
  const inForce = result.inForce.map((o) => `  ${describeThresholdInForce(o)}`);
  if (opts.json) {
    const control = {
      ...view,
      // Numbers to act on: the operator's cap now (0 while paused) and once unpaused (null: the plan's is unknown).
      cap: view.paused ? 0 : capWhenUnpaused(view),
      capWhenUnpaused: capWhenUnpaused(view),
    };
    const out = {
      checkpoint: file,
      changed: Object.keys(change).length > 0,
      said,
      control,
      runner: result.runner,
      thresholds: result.thresholds,
      thresholdsInForce: result.inForce,
    };
    ctx.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return EXIT.ok;
  }
  const changed = Object.keys(change).length > 0;
  const r = result.runner;
  let who: string;
  if (r && r.alive === true) who = `the run (pid ${r.pid}) applies it within one poll interval`;
  else if (r && r.alive === null)
    who = `the run holding it on ${r.host} (pid ${r.pid}) applies it within one poll interval, if it is alive`;
  else who = 'no run is going: it applies when `run` continues this checkpoint';
  const stopping = view.stop
    ? `stopping: asked for at ${new Date(view.stop.at).toISOString()} by ${stopAskedBy(view.stop.by)}\n`
    : '';
  const live = inForce.length > 0 ? `thresholds set live:\n${inForce.join('\n')}\n` : '';
  ctx.stdout.write(`${said}\n${stopping}${live}${changed ? `${who}\n` : ''}checkpoint: ${file}\n`);
  return EXIT.ok;
}

/** What a `--stop` did: asked, already asked, or nothing to stop; and who obeys it. */
function reportStop(result: ControlResult, given: string, opts: ControlOptions, ctx: CommandContext): number {
  const answer = result.stop!;
  const said = describeStop(answer);
  const r = result.runner;
  const who = !r
    ? null
    : r.alive === true
      ? `the run (pid ${r.pid}) obeys it within a second`
      : `the run holding it on ${r.host} (pid ${r.pid}) obeys it within a second, if it is alive`;
  if (opts.json) {
    const out = {
      checkpoint: result.file,
      changed: answer.kind === 'asked',
      said,
      stop: answer.kind === 'no run' ? null : answer.stop,
      ended: answer.kind === 'no run' ? answer.ended : null,
      stopFile: stopFilePath(result.file),
      runner: r,
    };
    ctx.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return EXIT.ok;
  }
  const lines = [said];
  if (who && answer.kind !== 'no run') lines.push(who);
  if (result.file !== given) lines.push(`a revert holds ${given}: the stop is for the revert`);
  lines.push(`checkpoint: ${result.file}`);
  ctx.stdout.write(`${lines.join('\n')}\n`);
  return EXIT.ok;
}

/** A stop's answer in words. */
export function describeStop(a: StopAnswer): string {
  const at = (s: { at: number }) => new Date(s.at).toISOString();
  switch (a.kind) {
    case 'asked':
      return 'stopping: no new moves; the moves in flight end first, then the run exits (6)';
    case 'already':
      return `already stopping (asked for at ${at(a.stop)} by ${stopAskedBy(a.stop.by)}); nothing written`;
    case 'no run':
      return a.ended
        ? `nothing to stop: the run has ended (${a.ended}); nothing written`
        : 'nothing to stop: no run is going (a stop would only stop the next `run` at once); nothing written';
  }
}
