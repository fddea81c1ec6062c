/**
 * `shardmove revert PLAN [--state FILE] [--only FILE] [--dry-run] [--yes] [--retry-quarantined] [--accept-plan-change]
 * [--overwrite-weights] [--events FILE|-] [--metrics-file PATH] [--lease DURATION]`: moves every item
 * the forward run moved back to the storage it came from, as a run of its own with its own
 * checkpoint (`state/<name>.revert.db` beside the forward `state/<name>.db`, or `<FILE>.revert.db`
 * beside `--state FILE`). Shows what it will do and asks on a terminal (`--yes` for automation);
 * `--dry-run` shows it and stops. Exit codes (README: Exit codes): 0 reverted and verified, or
 * nothing to revert, or the dry run's preview; 1 declined, failed, or no forward checkpoint; 2 bad
 * arguments, or no terminal and no --yes; 3 reverted except quarantined items; 4 refused (the
 * forward run holds its lock or has moves in flight or still queued, another plan or instance, the
 * weights changed since the forward run, a dry run's or a revert's checkpoint named); 5 lost the
 * lock; 6 stopped on request (`control --stop`, the stop file); 7 the instance did not answer for
 * instance.outage_wait (an outage holds it until then); 130 interrupted with the checkpoint
 * saved. Every hint it prints names `shardmove revert`. `--only FILE` moves back only the items of a
 * reviewed list (../runtime/revert/revert-only.ts): exit 2 for a list that is not usable or none of whose
 * items the forward run moved, 4 for one of another plan or while an earlier list is unfinished.
 */
import { executeRevert } from '../runtime/revert/revert.js';
import type { RevertOutcome, RevertPreview, SkippedItem } from '../runtime/revert/revert.js';
import type { RunEvents } from '../runtime/observe/event-sink.js';
import { confirm } from './confirm.js';
import type { CommandContext } from './context.js';
import { EXIT, processOf } from './context.js';
import { ArgsError } from './errors.js';
import { withRunEvents } from './events-file.js';
import { refuseRunOutputsThatAreInputs } from './outputs.js';
import { claimRunMetricsFile, interruptedLine, parseLease, reportOutcome, runObservers } from './run.js';
import { shellWord } from './command-line.js';
import { renderLaterWeights, renderWeightChanges } from './weights.js';
import { parseItemsFormat } from './run-items.js';

export interface RevertFlags {
  plan: string;
  state?: string;
  dryRun: boolean;
  yes: boolean;
  retryQuarantined?: boolean;
  acceptPlanChange?: boolean;
  overwriteWeights?: boolean;
  lease?: string;
  events?: string;
  eventsInterval?: string;
  metricsFile?: string;
  /** `--only FILE`: move back only the items of this reviewed list. */
  only?: string;
  itemsFormat?: string;
}

/**
 * The command that runs this revert again, with the flags that decide what it does (the plan, the
 * forward checkpoint, the accepted plan change, the overwritten weights); the one-off flags
 * (--dry-run, --retry-quarantined, --yes), the lease and the observers' outputs are left out.
 */
export function revertCommand(f: RevertFlags): string {
  const words = ['shardmove', 'revert', shellWord(f.plan)];
  if (f.state) words.push('--state', shellWord(f.state));
  if (f.only) words.push('--only', shellWord(f.only));
  if (f.only && f.itemsFormat) words.push('--items-format', shellWord(f.itemsFormat));
  if (f.acceptPlanChange) words.push('--accept-plan-change');
  if (f.overwriteWeights) words.push('--overwrite-weights');
  return words.join(' ');
}

/** The command that resumes the forward run of this revert: the plan and its checkpoint. */
export function forwardCommand(f: Pick<RevertFlags, 'plan' | 'state'>): string {
  return ['shardmove', 'run', shellWord(f.plan), ...(f.state ? ['--state', shellWord(f.state)] : [])].join(' ');
}

/** What the revert will do, as the operator reads it before saying yes. */
export function renderPreview(p: RevertPreview, overwriteWeights = false): string {
  const lines: string[] = [];
  lines.push(
    p.resuming ? `resuming the revert of ${p.forwardFile} on ${p.url}` : `revert of ${p.forwardFile} on ${p.url}`,
    `  its checkpoint: ${p.revertFile}`,
  );
  if (p.laterWeights) {
    lines.push(
      '  the weights changed since the forward run left them (another run, or by hand);',
      overwriteWeights
        ? '  the revert overwrites that change (--overwrite-weights):'
        : '  without --overwrite-weights the revert refuses to overwrite that change:',
      renderLaterWeights(p.laterWeights).replace(/^/gm, '  '),
    );
  } else if (p.list)
    lines.push('  weights: left as they are (a revert of part of the drain; a plain revert puts them back)');
  else if (p.weights.length > 0)
    lines.push('  first, the weights of before the forward run:', renderWeightChanges(p.weights).replace(/^/gm, '  '));
  else lines.push('  weights: already those of before the forward run');
  if (p.alive.length > 0) {
    lines.push(
      `  ${p.alive.length} move(s) of the forward run still queued or running on the instance`,
      '  (the revert refuses until they end):',
    );
    for (const m of p.alive)
      lines.push(
        `    ${m.kind.slice(0, -1)} ${m.id} (${m.name}): move ${m.moveId} ${m.state}, ${m.source} -> ${m.destination}`,
      );
  }
  if (p.list) lines.push(...renderList(p.list));
  if (p.total === 0) lines.push('  no item left to move back');
  for (const g of p.groups) lines.push(`  move ${g.n} ${g.kind} back from ${g.from}${g.to ? ` to ${g.to}` : ''}`);
  lines.push(...renderSkipped(p.skipped));
  return `${lines.join('\n')}\n`;
}

/** What a `--only` list selects: its items the forward run did not move, those taken already, the rest of the drain. */
export function renderList(l: NonNullable<RevertPreview['list']>): string[] {
  const lines = [`  only the items of the list ${l.file}:`];
  if (l.taken > 0) lines.push(`    ${l.taken} of them taken by an earlier revert already (not moved again)`);
  if (l.notMoved.length > 0) {
    lines.push(`    ${l.notMoved.length} of them not moved by the forward run (not touched):`);
    for (const n of l.notMoved.slice(0, 50))
      lines.push(
        `      ${l.file}:${n.line}: ${n.kind.slice(0, -1)} ${n.id}${n.path ? ` (${n.path})` : ''}: ${n.reason}`,
      );
    if (l.notMoved.length > 50) lines.push(`      ... and ${l.notMoved.length - 50} more`);
  }
  if (l.outside > 0) lines.push(`    ${l.outside} item(s) of the forward run stay on the destination: not in the list`);
  return lines;
}

/** The skipped items: moved again, deleted or being moved since the forward run, left where they are. */
export function renderSkipped(skipped: readonly SkippedItem[]): string[] {
  if (skipped.length === 0) return [];
  const lines = [`  skipped ${skipped.length} item(s) no longer where the forward run put them (left as they are):`];
  // All of them: each is an item someone else changed, which the operator has to know about.
  for (const s of skipped) lines.push(`    ${s.kind.slice(0, -1)} ${s.id} (${s.name}): ${s.reason}`);
  return lines;
}

export async function runRevertCommand(opts: RevertFlags, ctx: CommandContext): Promise<number> {
  if (opts.retryQuarantined && opts.dryRun) {
    throw new ArgsError('revert: --retry-quarantined changes the checkpoint; a --dry-run never does. Give one of them');
  }
  const format = parseItemsFormat(opts.itemsFormat, 'revert');
  if (format !== null && opts.only === undefined) throw new ArgsError('revert: --items-format goes with --only FILE');
  if (opts.only !== undefined && opts.overwriteWeights)
    throw new ArgsError(
      'revert: --only moves back part of the drain and leaves the weights as they are; --overwrite-weights goes with a plain revert',
    );
  const leaseMs = parseLease(opts.lease);
  const place = await refuseRunOutputsThatAreInputs('revert', opts, ctx);
  const metrics = claimRunMetricsFile(opts, place, ctx);
  try {
    return await withRunEvents(
      opts,
      ctx,
      (events, human) => startRevert(opts, leaseMs, events, human),
      (outcome, out) => finish(outcome, opts, out),
      (outcome) => (outcome.kind === 'ran' ? outcome.outcome : null),
    );
  } finally {
    metrics.release();
  }
}

function startRevert(
  opts: RevertFlags,
  leaseMs: number | undefined,
  events: RunEvents | undefined,
  ctx: CommandContext,
): Promise<RevertOutcome> {
  const observers = runObservers(events, opts.metricsFile, ctx, 'revert');
  // The clock of the command's context (a test's simulated one), else the runtime's own, as for run.
  const clock = ctx.clock ? { clock: ctx.clock } : {};
  return executeRevert(
    {
      planFile: opts.plan,
      statePath: opts.state,
      dryRun: opts.dryRun,
      retryQuarantined: opts.retryQuarantined ?? false,
      acceptPlanChange: opts.acceptPlanChange ?? false,
      overwriteWeights: opts.overwriteWeights ?? false,
      command: revertCommand(opts),
      forwardCommand: forwardCommand(opts),
      ...(opts.only !== undefined
        ? { only: { file: opts.only, format: parseItemsFormat(opts.itemsFormat, 'revert') } }
        : {}),
      leaseMs,
      ...processOf(ctx),
      observers,
      confirm: async (preview) => {
        ctx.stdout.write(renderPreview(preview, opts.overwriteWeights));
        return confirm(
          preview.resuming ? 'go on moving these items back?' : 'move these items back?',
          { yes: opts.yes, command: 'revert' },
          ctx,
        );
      },
    },
    clock,
  );
}

/** Prints how the revert ended and returns its exit code. */
function finish(outcome: RevertOutcome, opts: RevertFlags, ctx: CommandContext): number {
  const again = revertCommand(opts);
  switch (outcome.kind) {
    case 'nothing':
      ctx.stdout.write(`nothing to revert: ${outcome.reason}\n`);
      return EXIT.ok;
    case 'preview':
      ctx.stdout.write(renderPreview(outcome.preview, opts.overwriteWeights));
      ctx.stdout.write('dry run: nothing was changed (no weights written, no move, no revert checkpoint)\n');
      if (!outcome.refusal) return EXIT.ok;
      // What the revert itself would do now: refuse, so the dry run says so with the same exit code.
      ctx.stderr.write(`shardmove: ${outcome.refusal.message}\n`);
      return EXIT.refused;
    case 'declined':
      ctx.stderr.write('not reverted; nothing changed\n');
      return EXIT.failed;
    case 'stopped':
      ctx.stderr.write(`interrupted before the revert wrote anything. To revert: ${again}\n`);
      return EXIT.interrupted;
    case 'ran': {
      const run = outcome.outcome;
      if (run.kind === 'interrupted') {
        ctx.stderr.write(interruptedLine(run.inFlight, `the revert's checkpoint is saved. To continue it: ${again}`));
        return EXIT.interrupted;
      }
      if (run.kind === 'stopped') return reportOutcome(run, ctx, { again, plan: opts.plan });
      run.report.again = again;
      const code = reportOutcome(run, ctx, { plan: opts.plan });
      const lines = renderSkipped(outcome.skipped);
      if (lines.length > 0) ctx.stdout.write(`\nRevert:\n${lines.join('\n')}\n`);
      return code;
    }
  }
}
