/**
 * `shardmove run`. TODO(#3): implementation.
 */
import type { CommandContext } from './context.js';

export async function runRunCommand(opts: { plan: string; state?: string; dryRun: boolean; acceptPlanChange: boolean }, ctx: CommandContext): Promise<number> {
  void opts;
  ctx.stderr.write('shardmove run: not implemented yet\n');
  return 1;
}
