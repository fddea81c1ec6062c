/**
 * `shardmove demo`. TODO(#3): implementation.
 */
import type { CommandContext } from './context.js';

export async function runDemoCommand(opts: { state?: string }, ctx: CommandContext): Promise<number> {
  void opts;
  ctx.stderr.write('shardmove demo: not implemented yet\n');
  return 1;
}
