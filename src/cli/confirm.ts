/**
 * Asking the operator before a change to the instance or to a run's lock: on a terminal, a yes/no
 * question; `--yes` for automation; neither a terminal nor `--yes` is refused (a cron job must not
 * hang on a question nobody reads, and must not change anything it was not told to).
 *
 * The readline library draws the question with cursor codes of its own (`ESC [1G ESC [0J`: to the
 * first column, erase below). Those must reach the terminal as they are, so readline writes to the
 * terminal itself (./terminal.ts, promptStreamOf), never through the escape of names: the question
 * is always our own text.
 */
import { createInterface } from 'node:readline';
import type { CommandContext } from './context.js';
import { ArgsError } from './errors.js';
import { promptStreamOf } from './terminal.js';

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
  const rl = createInterface({ input: stdin, output: promptStreamOf(ctx.stderr) });
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
