/**
 * `shardmove unlock PLAN [--state FILE] [--yes]`: the operator's explicit override of the run lock
 * (compare Terraform's `force-unlock`). Shows who holds it, asks (or `--yes`), removes it and logs
 * the old holder in the checkpoint. A holder that still runs is fenced: its next checkpoint write
 * fails and it stops with exit 5. Exit 0 when removed or when there was no lock; 1 when there is no
 * checkpoint or the answer was no; 2 without a terminal and without --yes. Needs no credentials.
 */
import { readLockOf, unlockCheckpoint } from '../runtime/ownership/lease.js';
import { thisHost } from '../runtime/ownership/process.js';
import type { LockView } from '../report/status.js';
import { confirm } from './confirm.js';
import type { CommandContext } from './context.js';
import { EXIT, clockOf } from './context.js';
import { resolveRunCheckpoint } from './plan-identity.js';
import { shellWord } from './command-line.js';

export interface UnlockOptions {
  plan: string;
  state?: string;
  yes: boolean;
}

/** One line about the holder: who, since when, its last heartbeat, whether it is known to run. */
export function describeHolder(l: LockView, now: number): string {
  const beat = l.heartbeatAt ?? l.startedAt;
  const lease = l.leaseMs ? `, lease ${Math.round(l.leaseMs / 1000)}s` : ', no lease (an older shardmove)';
  const life =
    l.alive === true
      ? 'alive on this host'
      : l.alive === false
        ? 'not running on this host'
        : 'on another host: cannot tell from here whether it runs';
  return `pid ${l.pid} on ${l.host}, since ${new Date(l.startedAt).toISOString()}, last heartbeat ${Math.max(0, Math.round((now - beat) / 1000))}s ago${lease} (${life})`;
}

export async function runUnlockCommand(opts: UnlockOptions, ctx: CommandContext): Promise<number> {
  const { file } = await resolveRunCheckpoint(opts, ctx);
  const now = clockOf(ctx).now();
  const holder = readLockOf(file);
  if (!holder) {
    ctx.stdout.write(`not locked: ${file}\nnothing to do\n`);
    return EXIT.ok;
  }
  ctx.stderr.write(`the run lock of ${file} is held by ${describeHolder(holder, now)}\n`);
  if (holder.alive === true)
    ctx.stderr.write('warning: that process is alive; once unlocked it stops at its next checkpoint write (exit 5)\n');
  if (!(await confirm('remove it?', { yes: opts.yes, command: 'unlock' }, ctx))) {
    ctx.stderr.write('not removed; nothing changed\n');
    return EXIT.failed;
  }
  const removed = unlockCheckpoint(file, { pid: process.pid, host: thisHost() }, now);
  ctx.stdout.write(
    removed
      ? `unlocked: removed the lock of pid ${removed.pid} on ${removed.host} (logged as lock.unlocked); \`${['shardmove', 'run', shellWord(opts.plan), ...(opts.state ? ['--state', shellWord(opts.state)] : [])].join(' ')}\` may continue the checkpoint now\n`
      : 'not locked any more (its holder released it meanwhile); nothing to do\n',
  );
  return EXIT.ok;
}
