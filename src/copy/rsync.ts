/**
 * The rsync method: one `rsync -a --delete SOURCE/. TARGET/` of the whole storage directory. The
 * `--delete` and the `/.` are always added, whatever the plan wrote: without `--delete` a stale
 * repository on the target survives, and without `/.` rsync nests the source directory inside the
 * target. Resuming is running it again: rsync sends only what differs.
 */
import type { CopyPlan } from '../plan/copy-types.js';
import { CopyFailedError } from './errors.js';
import { SSH_OPTIONS, runCommand, runScript, showCommand, shq, sshArgv, tail } from './exec.js';
import type { MethodContext } from './types.js';
import { repoOfPath } from './types.js';

/** The rsync command line; `dryRun` asks rsync for its own itemised list of changes instead. */
export function rsyncArgv(plan: CopyPlan, dryRun: boolean): string[] {
  const { source, target } = plan.copy;
  const src = `${source.path === '/' ? '' : source.path}/.`;
  const dest = target.host === null ? `${target.path}/` : `${target.host}:${target.path}/`;
  return [
    'rsync',
    '-a',
    '--delete',
    // -s (--protect-args, called --secluded-args since rsync 3.3) sends the remote path through
    // rsync's protocol, never the remote shell: rsync 3.2.7 escapes `$` there but not a backtick.
    ...(target.host === null ? [] : ['-s', '-e', `ssh ${SSH_OPTIONS.join(' ')}`]),
    ...(dryRun ? ['--dry-run', '--itemize-changes'] : ['--out-format=%l %n']),
    src,
    dest,
  ];
}

/**
 * rsync's own itemised dry run (`--dry-run --itemize-changes`): the lines `keep` accepts. Null when
 * the target does not exist yet: rsync does not create its missing parents, so a dry run cannot
 * compare against nothing (and nothing there can be deleted).
 */
export async function itemizeRsync(
  plan: CopyPlan,
  signal: AbortSignal,
  keep: (line: string) => boolean = () => true,
): Promise<string[] | null> {
  const { target } = plan.copy;
  const exists =
    (
      await runScript(target.host, `[ -d ${shq(target.path)} ] && echo yes || echo no`, 'checking the target', {
        signal,
      })
    ).trim() === 'yes';
  if (!exists) return null;
  const lines: string[] = [];
  const onStdoutLine = (line: string) => {
    if (keep(line)) lines.push(line);
  };
  const r = await runCommand(rsyncArgv(plan, true), { signal, onStdoutLine });
  if (r.code !== 0) throw new CopyFailedError(`rsync --dry-run failed (exit ${r.code})\n${tail(r.stderr)}`);
  return lines;
}

/** Dry run: prints the command, then rsync's own itemisation of what it would change (itemizeRsync's lines). */
export function dryRunRsync(ctx: MethodContext, itemized: readonly string[] | null): void {
  const { target } = ctx.plan.copy;
  ctx.say(`would run: ${showCommand(rsyncArgv(ctx.plan, false))}`);
  ctx.say(`$ ${showCommand(rsyncArgv(ctx.plan, true))}`);
  if (itemized === null) {
    ctx.say(
      `target ${target.path} does not exist: it would be created and receive all ${ctx.repos.length} repositories`,
    );
    return;
  }
  for (const line of itemized) ctx.say(`  ${line}`);
}

/** Runs the copy; progress counts repositories touched and file bytes sent. */
export async function runRsync(ctx: MethodContext): Promise<void> {
  const { target } = ctx.plan.copy;
  const mkdir = `mkdir -p ${shq(target.path)}`;
  ctx.say(`$ ${target.host === null ? mkdir : showCommand(sshArgv(target.host, mkdir))}`);
  await runScript(target.host, mkdir, 'creating the target directory', { signal: ctx.signal });
  const argv = rsyncArgv(ctx.plan, false);
  ctx.say(`$ ${showCommand(argv)}`);
  const touched = new Set<string>();
  let bytes = 0;
  const r = await runCommand(argv, {
    signal: ctx.signal,
    onStdoutLine: (line) => {
      const m = /^(\d+) (.*)$/.exec(line);
      if (!m) return;
      if (!m[2]!.endsWith('/')) bytes += Number(m[1]);
      const repo = repoOfPath(m[2]!);
      if (repo) touched.add(repo);
      ctx.progress(touched.size, bytes);
    },
  });
  if (r.code !== 0) throw new CopyFailedError(`rsync failed (exit ${r.code}): ${showCommand(argv)}\n${tail(r.stderr)}`);
}
