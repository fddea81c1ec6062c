/**
 * `shardmove validate PLAN [--json]`: loads the plan exactly as `run` would (environment, *_file
 * secrets, named rules) and reports. Success prints "plan OK: <name>", a summary of every section
 * the plan sets and any warnings, and returns 0. An invalid plan throws the PlanError, which main.ts
 * prints (every problem as file:line:col: path: message) and maps to exit code 2, the same as for
 * `run` and `status`. With --json the answer is one JSON document on standard output either way
 * (valid or not, the same diagnostics), and the exit code is the same: 0 or 2.
 */
import { resolve } from 'node:path';
import { formatBytes } from '../plan/capacity-field.js';
import { describeBreaker } from '../plan/breaker-field.js';
import { formatPlanDuration } from '../time/durations.js';
import { PlanError, formatProblem } from '../plan/errors.js';
import type { PlanProblem } from '../plan/errors.js';
import { loadPlan } from '../plan/load.js';
import type { NotifyTarget } from '../plan/notify-field.js';
import type { Plan } from '../plan/types.js';
import type { ThrottleRule } from '../plan/values.js';
import { scheduleOf } from '../schedule/gate.js';
import { formatWindowTime, openWindow, upcomingWindows } from '../time/windows.js';
import { isCopyPlanFile } from '../plan/copy-load.js';
import { validateCopyPlan } from './copy-status.js';
import type { CommandContext } from './context.js';
import { EXIT, clockOf, textWidth } from './context.js';
import { describeSelect } from '../plan/select-field.js';
import { fitLines } from '../report/wrap.js';
import { sampleWords, verifyContentOf } from '../plan/verify-field.js';

/** Validates a plan file; returns 0 or throws PlanError (code SHARDMOVE_PLAN_INVALID); with json, returns 2 instead. */
export async function runValidateCommand(opts: { plan: string; json?: boolean }, ctx: CommandContext): Promise<number> {
  // Copy plans (`shardmove copy`) have their own loader and summary.
  if (!opts.json && (await isCopyPlanFile(opts.plan, ctx.cwd))) return validateCopyPlan(opts.plan, ctx);
  if (!opts.json) {
    const { plan, warnings } = await loadPlan(opts.plan, { env: ctx.env, cwd: ctx.cwd });
    ctx.stdout.write(
      `${[`plan OK: ${plan.name}`, ...fitLines(summaryLines(plan, clockOf(ctx).now()), { width: textWidth(ctx.stdout) }), ...warnings.map(formatProblem)].join('\n')}\n`,
    );
    return EXIT.ok;
  }
  const file = resolve(ctx.cwd, opts.plan);
  if (await isCopyPlanFile(opts.plan, ctx.cwd)) {
    return writeJson(ctx, {
      ...(await jsonOfCopy(opts.plan, ctx)),
      file,
    });
  }
  try {
    const { plan, warnings } = await loadPlan(opts.plan, { env: ctx.env, cwd: ctx.cwd });
    return writeJson(ctx, {
      valid: true,
      file,
      plan: plan.name,
      ...counts([], warnings),
      diagnostics: warnings.map(diagnostic),
      summary: summaryOf(plan, clockOf(ctx).now()),
      lines: summaryLines(plan, clockOf(ctx).now()),
    });
  } catch (err) {
    if (!(err instanceof PlanError)) throw err;
    return writeJson(ctx, {
      valid: false,
      file,
      plan: null,
      ...counts(err.problems, err.warnings),
      diagnostics: [...err.problems, ...err.warnings].map(diagnostic),
    });
  }
}

interface ValidateJson {
  valid: boolean;
  file: string;
  plan: string | null;
  errorCount: number;
  warningCount: number;
  diagnostics: Diagnostic[];
  summary?: unknown;
  lines?: string[];
}

/** One problem as automation reads it (Terraform's `validate -json` has the same parts). */
interface Diagnostic {
  severity: 'error' | 'warning';
  file: string;
  line: number;
  column: number;
  path: string;
  message: string;
  rule: string | null;
}

function diagnostic(p: PlanProblem): Diagnostic {
  return {
    severity: p.severity === 'warning' ? 'warning' : 'error',
    file: p.file,
    line: p.line,
    column: p.col,
    path: p.path,
    message: p.message,
    rule: p.rule ?? null,
  };
}

function counts(errors: readonly PlanProblem[], warnings: readonly PlanProblem[]) {
  return { errorCount: errors.length, warningCount: warnings.length };
}

function writeJson(ctx: CommandContext, doc: ValidateJson): number {
  ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  return doc.valid ? EXIT.ok : EXIT.invalid;
}

async function jsonOfCopy(plan: string, ctx: CommandContext): Promise<Omit<ValidateJson, 'file'>> {
  const { loadCopyPlan } = await import('../plan/copy-load.js');
  try {
    const { plan: copy, warnings } = await loadCopyPlan(plan, { env: ctx.env, cwd: ctx.cwd });
    const { method, source, target } = copy.copy;
    return {
      valid: true,
      plan: copy.name,
      ...counts([], warnings),
      diagnostics: warnings.map(diagnostic),
      summary: { kind: 'copy', method, source: source.path, target: { host: target.host ?? null, path: target.path } },
    };
  } catch (err) {
    if (!(err instanceof PlanError)) throw err;
    return {
      valid: false,
      plan: null,
      ...counts(err.problems, err.warnings),
      diagnostics: [...err.problems, ...err.warnings].map(diagnostic),
    };
  }
}

function verifyWords(v: Plan['verify']): string {
  const content = verifyContentOf(v);
  if (!v) return 'off';
  if (!content) return 'on';
  const share = sampleWords(content.fraction);
  return `on, and the content (HEAD, branches, tags) of ${share} compared before and after`;
}

/** The summary's lines, one section a line or two: what `validate` prints under "plan OK". */
export function summaryLines(plan: Plan, now: number): string[] {
  const pace = plan.move.mode === 'bulk' ? 'bulk' : `throttled, at most ${plan.move.concurrency} in flight`;
  const breaker = plan.retry.pauseAfter;
  return [
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
    ...(breaker
      ? [
          'rate' in breaker
            ? `  breaker: the run pauses at ${describeBreaker(breaker)}`
            : `  breaker: ${describeBreaker(breaker)} pause the run`,
        ]
      : []),
    ...scheduleLines(plan, now),
    ...(plan.throttle
      ? [
          `  throttle: on (cap lowered on Gitaly health, latency p90 above ${formatPlanDuration(plan.throttle.latencyP90Ms)}, failed moves, 429s, slowdowns)`,
          ...(plan.throttle.rules ?? []).map((r) => `    rule ${r.name}: ${ruleWords(r)}`),
        ]
      : []),
    ...(plan.prometheus ? [`  prometheus: ${plan.prometheus.url} (on error: ${plan.prometheus.onError})`] : []),
    ...(plan.capacity ? capacityLines(plan.capacity) : []),
    ...(plan.notify ?? []).map((t) => `  ${t.path}: ${targetWords(t)} on ${t.all ? "'*'" : t.on.join(', ')}`),
    `  verify: ${verifyWords(plan.verify)}; geo resync: ${plan.geo.resync ? 'on (RESYNC_ALL the moved kinds after verification)' : 'off'}`,
  ];
}

function ruleWords(r: ThrottleRule): string {
  const bound = r.above !== null ? `above ${r.above}` : `below ${r.below}`;
  const hold = r.forMs > 0 ? ` for ${formatPlanDuration(r.forMs)}` : '';
  return `${r.action} while ${r.query} is ${bound}${hold}`;
}

function capacityLines(c: NonNullable<Plan['capacity']>): string[] {
  const storages = Object.entries(c.storages).map(
    ([name, room]) =>
      `${name} ${'bytes' in room ? `${formatBytes(room.bytes)} free` : `free from PromQL ${room.query}`}`,
  );
  return [
    `  capacity: ${storages.length > 0 ? storages.join('; ') : 'no storage declared'}${c.keepFreeBytes > 0 ? `; keep ${formatBytes(c.keepFreeBytes)} free on each destination` : ''}`,
  ];
}

/** Where a notification goes, without what may carry a credential: a URL's path and query, a command's arguments. */
function targetWords(t: NotifyTarget): string {
  if (t.kind === 'exec') return `command ${t.argv[0] ?? ''}`;
  return `${t.format} webhook to ${originOf(t.url)}`;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'an unreadable URL';
  }
}

/** The summary as data, for `validate --json`: every section, with no secret and no webhook path. */
function summaryOf(plan: Plan, now: number): unknown {
  const schedule = scheduleOf(plan);
  return {
    move: {
      kinds: plan.move.kinds,
      from: plan.move.from,
      to: plan.move.to,
      mode: plan.move.mode,
      concurrency: plan.move.concurrency,
      queueAhead: plan.move.queueAhead,
      until: plan.move.until ?? null,
      select: plan.move.select ? describeSelect(plan.move.select) : null,
    },
    weights: plan.weights,
    poll: { intervalMs: plan.poll.intervalMs },
    retry: { maxAttempts: plan.retry.maxAttempts, backoffMs: plan.retry.backoffMs, pauseAfter: plan.retry.pauseAfter },
    schedule: schedule
      ? {
          timezone: schedule.timezone,
          windows: plan.schedule?.windows ?? [],
          openNow: openWindow(schedule, now),
          upcoming: upcomingWindows(schedule, now, 3).map((w) => ({
            opens: new Date(w.opens).toISOString(),
            closes: w.closes === null ? null : new Date(w.closes).toISOString(),
          })),
        }
      : null,
    throttle: plan.throttle
      ? {
          latencyP90Ms: plan.throttle.latencyP90Ms,
          rules: (plan.throttle.rules ?? []).map((r) => ({
            name: r.name,
            query: r.query,
            above: r.above,
            below: r.below,
            action: r.action,
            forMs: r.forMs,
          })),
        }
      : null,
    prometheus: plan.prometheus ? { url: plan.prometheus.url, onError: plan.prometheus.onError } : null,
    capacity: plan.capacity
      ? {
          keepFreeBytes: plan.capacity.keepFreeBytes,
          storages: Object.fromEntries(
            Object.entries(plan.capacity.storages).map(([n, room]) => [
              n,
              'bytes' in room ? { freeBytes: room.bytes } : { query: room.query },
            ]),
          ),
        }
      : null,
    notify: (plan.notify ?? []).map((t) => ({
      path: t.path,
      kind: t.kind,
      to: t.kind === 'exec' ? (t.argv[0] ?? '') : originOf(t.url),
      ...(t.kind === 'webhook' ? { format: t.format } : {}),
      on: t.all ? ['*'] : t.on,
    })),
    verify: plan.verify,
    geo: { resync: plan.geo.resync },
  };
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
