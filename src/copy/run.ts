/**
 * `shardmove copy`: loads the copy plan, checks every guardrail before anything is written, runs the
 * method (or prints what it would do), verifies the target against the source and records each step
 * in the copy checkpoint, so an interrupted rsync or backup resumes and an interrupted tar is
 * recognised as such.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { loadCopyPlan } from '../plan/copy-load.js';
import type { CopyPlan } from '../plan/copy-types.js';
import { isAlive, thisHost } from '../runtime/ownership/process.js';
import { locateCheckpoint } from '../runtime/paths.js';
import type { CopyRepoRow, CopyRunRow } from '../store/copy-checkpoint.js';
import { CopyCheckpoint } from '../store/copy-checkpoint.js';
import { LockedError } from '../store/errors.js';
import { dryRunBackup, runBackup } from './backup.js';
import { CopyRefusedError } from './errors.js';
import type { TargetFacts } from './guard.js';
import {
  checkClustered,
  checkOverlap,
  checkSource,
  checkStatePath,
  checkTargetIsDirectory,
  isThisMachine,
  readTargetFacts,
  realLocalPath,
} from './guard.js';
import { createCopyProgress } from './progress.js';
import type { RepoEntry } from './repos.js';
import { findLocalRepos, findTargetRepos, listEntries } from './repos.js';
import { readRefs } from './refs.js';
import { checkRsyncDeletions, isDeletionLine } from './rsync-deletions.js';
import { dryRunRsync, itemizeRsync, runRsync } from './rsync.js';
import type { TarWipe } from './tar.js';
import { describeWipe, dryRunTar, runTar } from './tar.js';
import type { MethodContext } from './types.js';
import type { VerifyResult } from './verify.js';
import { compareRefs, verifyCopy } from './verify.js';
import { checkWipeSafety, wipeTarget } from './wipe.js';

export interface CopyOptions {
  planFile: string;
  statePath?: string | undefined;
  dryRun: boolean;
  wipeTarget: boolean;
  /** With wipeTarget: also a target not owned by the user or without a storage layout. */
  wipeAnyTarget: boolean;
  /** The operator says an ssh target is another machine (its machine id or real path is unknown). */
  hostsDiffer: boolean;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  signal: AbortSignal;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  now?: () => number;
}

export type CopyOutcome =
  | { kind: 'interrupted'; checkpoint: string }
  | { kind: 'dry-run'; plan: CopyPlan }
  | {
      kind: 'finished';
      plan: CopyPlan;
      checkpoint: string;
      repos: number;
      bytes: number;
      verify: VerifyResult;
      failed: CopyRepoRow[];
    };

/**
 * state/<name>.copy.db beside the plan file unless --state (runtime/paths.ts, as every command's
 * checkpoint): never the move checkpoint of a plan with the same name.
 */
export function copyCheckpointPath(
  planFile: string,
  planName: string,
  statePath: string | undefined,
  cwd: string,
): string {
  return locateCheckpoint({ planFile, planName, statePath, role: 'copy', cwd }).file;
}

/** The backup directory: the plan's, or <name>.backup next to the checkpoint. */
export function backupDirFor(plan: CopyPlan, checkpoint: string): string {
  return plan.copy.backupPath ?? join(dirname(checkpoint), `${plan.name}.backup`);
}

/** What an earlier run left in the checkpoint, read without writing anything. */
function peekCheckpoint(file: string): {
  run: CopyRunRow | null;
  repos: CopyRepoRow[];
  lock: ReturnType<CopyCheckpoint['readLock']>;
} {
  if (!existsSync(file)) return { run: null, repos: [], lock: null };
  const cp = CopyCheckpoint.openReadOnly(file);
  try {
    return { run: cp.readRun(), repos: cp.readRepos(), lock: cp.readLock() };
  } finally {
    cp.close();
  }
}

export async function executeCopy(opts: CopyOptions): Promise<CopyOutcome> {
  const now = opts.now ?? Date.now;
  const { plan, hash } = await loadCopyPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const file = copyCheckpointPath(opts.planFile, plan.name, opts.statePath, opts.cwd);
  const say = (line: string) => opts.stdout.write(`${line}\n`);
  const { method, target } = plan.copy;
  const backupDir = method === 'backup' ? backupDirFor(plan, file) : null;

  // Every guardrail, before anything is written (the checkpoint included).
  if (opts.wipeTarget && method !== 'tar') {
    throw new CopyRefusedError(
      'wipe-target-tar-only',
      `--wipe-target empties the target before a tar copy; method ${method} never needs it${method === 'rsync' ? ' (rsync --delete removes what the source does not have)' : ''}`,
    );
  }
  const prior = peekCheckpoint(file);
  if (prior.lock && prior.lock.host === thisHost() && prior.lock.pid !== process.pid && isAlive(prior.lock.pid))
    throw new LockedError(file, prior.lock);
  checkClustered(plan);
  const source = await checkSource(plan);
  const sameMachine = await isThisMachine(target.host, opts.hostsDiffer, opts.signal);
  const facts: TargetFacts = await readTargetFacts(target.host, target.path, sameMachine, opts.signal);
  await checkOverlap(plan, source, facts, backupDir, opts.hostsDiffer);
  await checkStatePath(file, source, facts);
  await checkTargetIsDirectory(target.host, target.path, opts.signal);
  const resuming = prior.run !== null && prior.run.phase !== 'done' && prior.run.phase !== 'failed';
  if (resuming && (prior.run!.planHash !== hash || prior.run!.method !== method)) {
    throw new CopyRefusedError(
      'plan-changed',
      `checkpoint ${file} belongs to an unfinished copy of another plan (or method); finish it with that plan, or use another --state`,
    );
  }
  let wipe: TarWipe | null = null;
  if (method === 'tar') {
    const interrupted = resuming && prior.run!.phase === 'copying';
    const verifying = resuming && prior.run!.phase === 'verifying';
    if (interrupted && !opts.wipeTarget) {
      throw new CopyRefusedError(
        'tar-interrupted',
        `an earlier tar copy into ${target.path} was interrupted; tar cannot resume. Run again with --wipe-target to empty the target and start over`,
      );
    }
    const entries = await listEntries(target.host, target.path, opts.signal);
    // A tar that finished copying and was stopped while verifying only verifies again.
    if (entries.length > 0 && !opts.wipeTarget && !verifying) {
      throw new CopyRefusedError(
        'tar-empty-target',
        `tar needs an empty target; ${target.path} holds ${entries.length} entries (${entries.slice(0, 5).join(', ')}${entries.length > 5 ? ', ...' : ''}). Empty it, or pass --wipe-target`,
      );
    }
    if (opts.wipeTarget) {
      const real = await checkWipeSafety(plan, source, facts, { wipeAny: opts.wipeAnyTarget, signal: opts.signal });
      wipe = { real, entries: await listEntries(target.host, real, opts.signal) };
    }
  }
  let itemized: string[] | null = null;
  if (method === 'rsync' && (opts.dryRun || facts.sameMachine)) {
    itemized = await itemizeRsync(plan, opts.signal, opts.dryRun ? undefined : isDeletionLine);
    // The last line of defence (rsync-deletions.ts), with the target's real path as its host and,
    // being this machine, as this process resolves it: two views, so one wrong answer is not enough.
    if (facts.sameMachine) {
      const reals = new Set([await realLocalPath(target.path), ...(facts.real === null ? [] : [facts.real])]);
      await checkRsyncDeletions(itemized ?? [], [...reals], source);
    }
  }
  const repos = await findLocalRepos(plan.copy.source.path);
  if (method === 'backup') await checkBackupTarget(plan, repos, resuming ? prior.repos : [], opts.signal);

  const bytesTotal = repos.reduce((s, r) => s + r.bytes, 0);
  const base = { plan, repos, signal: opts.signal, say, now };
  if (opts.dryRun) {
    say(
      `dry run of copy ${plan.name} (${method}): ${repos.length} repositories, ${bytesTotal} bytes; nothing is written`,
    );
    const ctx: MethodContext = { ...base, checkpoint: null, progress: () => {} };
    if (method === 'rsync') dryRunRsync(ctx, itemized);
    else if (method === 'tar') dryRunTar(ctx, wipe);
    else dryRunBackup(ctx, backupDir!, resuming ? prior.repos : []);
    return { kind: 'dry-run', plan };
  }

  mkdirSync(dirname(file), { recursive: true });
  const cp = CopyCheckpoint.open(file);
  const progress = createCopyProgress(opts.stderr);
  try {
    cp.acquireLock({ pid: process.pid, host: thisHost(), startedAt: now() }, isAlive);
    // tar never resumes: after --wipe-target it starts over; a finished copy run again starts over too.
    if (!resuming || (method === 'tar' && (prior.run!.phase !== 'verifying' || opts.wipeTarget)))
      cp.startRun(plan.name, hash, method, now());
    else cp.event('copy.resumed', { phase: prior.run!.phase }, now());
    cp.setTotals(repos.length, bytesTotal, now());
    // Only backup works repository by repository; rsync and tar copy the tree in one command.
    if (method === 'backup') {
      cp.addRepos(repos, now());
      cp.retryFailed(now());
    }
    let step = method === 'backup' ? 'backing up' : method;
    const show = (reposDone: number, bytesDone: number, s?: string) => {
      if (s) step = s;
      progress.update({ step, reposDone, reposTotal: repos.length, bytesDone, bytesTotal });
    };
    const ctx: MethodContext = { ...base, checkpoint: cp, progress: show };
    const phase = cp.readRun()!.phase;
    if (phase === 'started' || phase === 'copying') {
      if (wipe !== null) {
        say(`emptying ${describeWipe(target.path, wipe.real)}`);
        cp.event('target.wiped', { path: target.path, real: wipe.real, entries: wipe.entries.length }, now());
        await wipeTarget(target.host, wipe.real, target.path, opts.signal);
      }
      cp.setPhase('copying', now());
      show(0, 0);
      if (method === 'rsync') await runRsync(ctx);
      else if (method === 'tar') await runTar(ctx);
      else await runBackup(ctx, backupDir!);
      cp.setDone(repos.length, bytesTotal, now());
      cp.setPhase('verifying', now());
    }
    show(0, bytesTotal, 'verifying');
    const verify = await verifyCopy({
      sourceRoot: plan.copy.source.path,
      target,
      repos: repos.map((r) => r.rel),
      signal: opts.signal,
      onRepo: (n) => show(n, bytesTotal),
    });
    progress.stop();
    cp.setDifferences(verify.differences.length, now());
    const failed = cp.readRepos().filter((r) => r.state === 'failed');
    cp.setPhase(verify.differences.length === 0 && failed.length === 0 ? 'done' : 'failed', now());
    return { kind: 'finished', plan, checkpoint: file, repos: repos.length, bytes: bytesTotal, verify, failed };
  } catch (err) {
    progress.stop();
    if (opts.signal.aborted) {
      cp.event('copy.interrupted', {}, now());
      return { kind: 'interrupted', checkpoint: file };
    }
    throw err;
  } finally {
    cp.close();
  }
}

/**
 * Backup restores only into places that hold no repository yet: a repository already on the target
 * is refused, unless this copy restored it (its refs are the ones the checkpoint recorded).
 */
async function checkBackupTarget(
  plan: CopyPlan,
  repos: readonly RepoEntry[],
  prior: readonly CopyRepoRow[],
  signal: AbortSignal,
): Promise<void> {
  const { host, path } = plan.copy.target;
  const onTarget = new Set(await findTargetRepos(host, path, signal));
  const byRel = new Map(prior.map((r) => [r.rel, r]));
  const clashes: string[] = [];
  for (const r of repos) {
    if (!onTarget.has(r.rel)) continue;
    const row = byRel.get(r.rel);
    if (row?.state === 'restored') continue;
    if (row?.refs) {
      const present = await readRefs(host, posix.join(path, r.rel), signal);
      if (present && compareRefs(r.rel, row.refs, present).length === 0) continue;
    }
    clashes.push(r.rel);
  }
  if (clashes.length > 0) {
    throw new CopyRefusedError(
      'backup-target-exists',
      `the target already holds ${clashes.length} of these repositories (${clashes.slice(0, 5).join(', ')}${clashes.length > 5 ? ', ...' : ''}); restore never overwrites a repository`,
    );
  }
}
