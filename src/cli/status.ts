/**
 * `shardmove status`. TODO(#3): implementation.
 */
import type { CommandContext } from './context.js';

export async function runStatusCommand(opts: { plan: string; state?: string; json: boolean }, ctx: CommandContext): Promise<number> {
  void opts;
  ctx.stderr.write('shardmove status: not implemented yet\n');
  return 1;
}
