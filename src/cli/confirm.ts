/**
 * Asking the operator before a change to the instance or to a run's lock: on a terminal, a yes/no
 * question; `--yes` for automation; neither a terminal nor `--yes` is refused (a cron job must not
 * hang on a question nobody reads, and must not change anything it was not told to).
 */
import { createInterface } from 'node:readline';
import type { CommandContext } from './context.js';
import { ArgsError } from './errors.js';

/**
 * True when the change may go ahead: `yes` given, or the operator answered "yes"/"y" on the
 * terminal. Throws SHARDMOVE_ARGS_INVALID (exit 2) without a terminal and without `yes`.
 */
export async function confirm(
  question: string,
  opts: { yes: boolean; command: string },
  ctx: CommandContext,
): Promise<boolean> {
  if (opts.yes) return true;
  const stdin = ctx.stdin;
  if (!stdin?.isTTY) {
    throw new ArgsError(
      `${opts.command}: standard input is not a terminal, so there is nobody to confirm the change; pass --yes to make it without asking`,
    );
  }
  const rl = createInterface({ input: stdin, output: ctx.stderr });
  try {
    const answer = await new Promise<string>((resolve) => {
      rl.question(`${question} [y/N] `, resolve);
      rl.once('close', () => resolve(''));
    });
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
