/**
 * `shardmove validate PLAN`: loads the plan exactly as `run` would (environment, *_file secrets,
 * named rules) and reports. Success prints "plan OK: <name>", a one-line summary and any warnings,
 * and returns 0. An invalid plan throws the PlanError, which main.ts prints (every problem as
 * file:line:col: path: message) and maps to exit code 2, the same as for `run` and `status`.
 */
import { formatBytes } from '../plan/capacity-field.js';
import { formatPlanDuration } from '../plan/durations.js';
import { formatProblem } from '../plan/errors.js';
import { loadPlan } from '../plan/load.js';
import type { Plan } from '../plan/types.js';
import { scheduleOf } from '../schedule/gate.js';
import { formatWindowTime, openWindow, upcomingWindows } from '../time/windows.js';
import { isCopyPlanFile } from '../plan/copy-load.js';
import { validateCopyPlan } from './copy-status.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';
import { describeSelect } from '../plan/select-field.js';

/** Validates a plan file; returns 0 or throws PlanError (code SHARDMOVE_PLAN_INVALID). */
export async function runValidateCommand(opts: { plan: string }, ctx: CommandContext): Promise<number> {
  // Copy plans (`shardmove copy`) have their own loader and summary.
  if (await isCopyPlanFile(opts.plan, ctx.cwd)) return validateCopyPlan(opts.plan, ctx);
  const { plan, warnings } = await loadPlan(opts.plan, { env: ctx.env, cwd: ctx.cwd });
  const pace = plan.move.mode === 'bulk' ? 'bulk' : `throttled, at most ${plan.move.concurrency} in flight`;
  const lines = [
    `plan OK: ${plan.name}`,
    `  moves ${plan.move.kinds.join(', ')} from ${plan.move.from.join(', ')} to ${plan.move.to.join(' and ')}${plan.move.to.length > 1 ? ' (each item to the one with the most room left)' : ''} (${pace}), ` +
      `polling every ${formatPlanDuration(plan.poll.intervalMs)}, up to ${plan.retry.maxAttempts} attempts per item`,
    ...(plan.move.until
      ? [
          `  stops each source once ${'movedBytes' in plan.move.until ? `${formatBytes(plan.move.until.movedBytes)} have left it` : `it has ${formatBytes(plan.move.until.freeBytes)} free`} (move.until); the rest stays`,
        ]
      : []),
    ...(plan.move.select
      ? [`  moves ${describeSelect(plan.move.select)}; pre-flight checks every name on the instance`]
      : []),
    ...scheduleLines(plan, Date.now()),
    ...(plan.throttle
      ? [
          `  throttle: on (cap lowered on Gitaly health, latency p90 above ${formatPlanDuration(plan.throttle.latencyP90Ms)}, failed moves, 429s, slowdowns)`,
        ]
      : []),
    ...warnings.map(formatProblem),
  ];
  ctx.stdout.write(`${lines.join('\n')}\n`);
  return EXIT.ok;
}

/** The plan's windows and when the next ones open (in the plan's zone). */
export function scheduleLines(plan: Plan, now: number): string[] {
  const schedule = scheduleOf(plan);
  if (!schedule) return [];
  const fmt = (ms: number | null) => (ms === null ? 'never' : formatWindowTime(ms, schedule.timezone));
  const lines = [
    `  schedule: ${plan.schedule?.windows.join(', ')} (${schedule.timezone}); ${openWindow(schedule, now) ? 'inside a window now' : 'outside every window now'}`,
  ];
  for (const w of upcomingWindows(schedule, now, 3)) lines.push(`    ${fmt(w.opens)} to ${fmt(w.closes)}`);
  return lines;
}
