/**
 * `shardmove validate`. TODO(#3): implementation.
 */
import type { CommandContext } from './context.js';

export async function runValidateCommand(opts: { plan: string }, ctx: CommandContext): Promise<number> {
  void opts;
  ctx.stderr.write('shardmove validate: not implemented yet\n');
  return 1;
}
