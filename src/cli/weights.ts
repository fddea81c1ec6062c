/**
 * `shardmove weights restore PLAN [--state FILE] [--yes]`: puts back the storage weights the run's
 * checkpoint recorded before its first write, instead of a PUT by hand. Shows the change, asks on a
 * terminal (`--yes` for automation), refuses while a run holds the checkpoint, and changes nothing
 * when the weights are already back. Exit 0 when restored or nothing to do; 1 when answered no, or
 * on failure (no checkpoint, the instance refused); 2 without a terminal and without --yes;
 * 4 while a run holds the lock; 7 when the instance did not answer for instance.outage_wait (an
 * outage holds it until then, as it holds a run).
 */
import { restoreWeights } from '../runtime/weights-restore.js';
import type { LaterWeight, WeightChange } from '../actors/index.js';
import { confirm } from './confirm.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';
import { shellWord } from './command-line.js';

export interface WeightsRestoreOptions {
  plan: string;
  state?: string;
  yes: boolean;
  overwriteWeights?: boolean;
}

/** The change as a small table: storage, weight now, weight restored. */
export function renderWeightChanges(changes: readonly WeightChange[]): string {
  const w = Math.max('storage'.length, ...changes.map((c) => c.storage.length));
  const rows = changes.map(
    (c) => `  ${c.storage.padEnd(w)}  ${String(c.from).padStart(3)}  ->  ${String(c.to).padStart(3)}`,
  );
  return [`  ${'storage'.padEnd(w)}  now      restored`, ...rows].join('\n');
}

/** The command that runs this restore again (without --yes: the operator decides that). */
function restoreCommand(opts: WeightsRestoreOptions): string {
  const words = ['shardmove', 'weights', 'restore', shellWord(opts.plan)];
  if (opts.state) words.push('--state', shellWord(opts.state));
  return words.join(' ');
}

/** A later change of the weights: what the forward run left, what the instance has, what the revert writes. */
export function renderLaterWeights(later: readonly LaterWeight[]): string {
  const w = Math.max('storage'.length, ...later.map((c) => c.storage.length));
  const num = (n: number) => String(n).padStart(5);
  return [
    `  ${'storage'.padEnd(w)}  forward left    now  revert writes`,
    ...later.map((c) => `  ${c.storage.padEnd(w)}         ${num(c.left)}  ${num(c.now)}          ${num(c.write)}`),
  ].join('\n');
}

export async function runWeightsRestoreCommand(opts: WeightsRestoreOptions, ctx: CommandContext): Promise<number> {
  const outcome = await restoreWeights({
    planFile: opts.plan,
    statePath: opts.state,
    env: ctx.env,
    cwd: ctx.cwd,
    stderr: ctx.stderr,
    signal: ctx.signal,
    overwriteWeights: opts.overwriteWeights ?? false,
    command: restoreCommand(opts),
    confirm: async (changes, info) => {
      ctx.stdout.write(
        `weights of ${info.url}, back to what checkpoint ${info.file} recorded before the run's first write:\n${renderWeightChanges(changes)}\n`,
      );
      if (info.later)
        ctx.stdout.write(
          `they were changed since the run left them; --overwrite-weights undoes that change too:\n${renderLaterWeights(info.later)}\n`,
        );
      return confirm('write these weights?', { yes: opts.yes, command: 'weights restore' }, ctx);
    },
  });
  switch (outcome.kind) {
    case 'nothing-recorded':
      ctx.stdout.write(
        `nothing to restore: checkpoint ${outcome.file} recorded no weights (the run never reached its weights step)\n`,
      );
      return EXIT.ok;
    case 'unchanged':
      ctx.stdout.write(
        `nothing to change: the instance already has the weights recorded before the run (${JSON.stringify(outcome.weights)})\n`,
      );
      return EXIT.ok;
    case 'declined':
      ctx.stderr.write('not written; nothing changed\n');
      return EXIT.failed;
    case 'interrupted':
      ctx.stderr.write('interrupted before the weights were sent: not written; nothing changed\n');
      return EXIT.interrupted;
    case 'restored':
      ctx.stdout.write(
        `restored: repository_storages_weighted is ${JSON.stringify(outcome.weights)} again (logged in the checkpoint as weights.restored)\n`,
      );
      return EXIT.ok;
  }
}
