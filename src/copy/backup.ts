/**
 * The backup and restore method, for real: each repository is backed up with `git bundle create
 * --all` (plus its `custom_hooks` directory as a tar, when it has one) into the backup directory,
 * with a manifest of refs and sha256 checksums; then restored on the target by cloning the bundle as
 * a bare mirror into a temporary directory that is renamed into place once complete. The checkpoint
 * records each repository's state, so both halves resume repository by repository; a bundle whose
 * checksum no longer matches the manifest is refused, and a restored repository whose refs differ
 * from the manifest is marked failed.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rename, stat } from 'node:fs/promises';
import { refuseNonFile, writeFileAtomic } from '../files/atomic.js';
import { dirname, join, posix } from 'node:path';
import type { CopyRepoRow } from '../store/copy-checkpoint.js';
import { runChecked, runScript, scriptArgv, showCommand, shq } from './exec.js';
import type { RefMap } from './refs.js';
import { readRefs } from './refs.js';
import type { MethodContext } from './types.js';
import { compareRefs, formatDifference } from './verify.js';

/** Files of one repository in the backup directory. */
export function backupFiles(backupDir: string, rel: string): { bundle: string; hooks: string } {
  return { bundle: join(backupDir, `${rel}.bundle`), hooks: join(backupDir, `${rel}.custom_hooks.tar`) };
}

/** The commands the backup of one repository runs (printed by the dry run, run for real by backupRepo). */
export function backupCommands(sourceRoot: string, backupDir: string, rel: string): string[][] {
  const f = backupFiles(backupDir, rel);
  const repo = join(sourceRoot, rel);
  return [
    ['git', `--git-dir=${repo}`, 'bundle', 'create', f.bundle, '--all'],
    ['tar', '-C', repo, '-cf', f.hooks, 'custom_hooks'],
  ];
}

/** sha256 hex of a file, streamed. */
export function sha256File(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (c) => h.update(c))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

export function dryRunBackup(ctx: MethodContext, backupDir: string, rows: readonly CopyRepoRow[]): void {
  const state = new Map(rows.map((r) => [r.rel, r.state]));
  const todo = ctx.repos.filter((r) => state.get(r.rel) !== 'restored');
  ctx.say(`backup directory: ${backupDir}`);
  ctx.say(
    `would back up and restore ${todo.length} of ${ctx.repos.length} repositories (the others are restored already):`,
  );
  for (const r of todo) {
    const f = backupFiles(backupDir, r.rel);
    const target = posix.join(ctx.plan.copy.target.path, r.rel);
    if (state.get(r.rel) !== 'bundled') {
      for (const argv of backupCommands(ctx.plan.copy.source.path, backupDir, r.rel))
        ctx.say(`would run: ${showCommand(argv)}${argv[0] === 'tar' ? '   (only when custom_hooks exists)' : ''}`);
    }
    ctx.say(
      `would run: ${showCommand(scriptArgv(ctx.plan.copy.target.host, `git clone --mirror ${shq(f.bundle)} ${shq(target)}`))}`,
    );
    ctx.say(`  + ${r.rel} (${r.bytes} bytes)`);
  }
}

/** Backs up every repository not bundled yet, then restores every one not restored yet. */
export async function runBackup(ctx: MethodContext, backupDir: string): Promise<void> {
  const cp = ctx.checkpoint!;
  await mkdir(backupDir, { recursive: true });
  const bytesOf = new Map(ctx.repos.map((r) => [r.rel, r.bytes]));
  let rows = cp.readRepos();
  let bundled = rows.filter((r) => r.state !== 'pending').length;
  for (const row of rows) {
    if (row.state !== 'pending') continue;
    ctx.progress(bundled, 0, 'backing up');
    await backupRepo(ctx, backupDir, row.rel);
    bundled += 1;
  }
  rows = cp.readRepos();
  await writeManifest(ctx, backupDir, rows);
  let done = 0;
  let bytes = 0;
  for (const row of rows) {
    if (row.state === 'restored') {
      done += 1;
      bytes += bytesOf.get(row.rel) ?? 0;
      continue;
    }
    if (row.state !== 'bundled') continue;
    ctx.progress(done, bytes, 'restoring');
    if (await restoreRepo(ctx, backupDir, row)) {
      done += 1;
      bytes += bytesOf.get(row.rel) ?? 0;
    }
  }
  await writeManifest(ctx, backupDir, cp.readRepos());
  ctx.progress(done, bytes, 'restored');
}

async function backupRepo(ctx: MethodContext, backupDir: string, rel: string): Promise<void> {
  const cp = ctx.checkpoint!;
  const repo = join(ctx.plan.copy.source.path, rel);
  const f = backupFiles(backupDir, rel);
  await mkdir(dirname(f.bundle), { recursive: true });
  const refs = await readRefs(null, repo, ctx.signal);
  if (refs === null) {
    cp.setRepo(rel, 'failed', ctx.now(), { error: 'cannot read its refs on the source' });
    return;
  }
  const [bundleArgv, hooksArgv] = backupCommands(ctx.plan.copy.source.path, backupDir, rel) as [string[], string[]];
  let bundleSha256 = '';
  if (Object.keys(refs).length > 0) {
    // Written under a temporary name and renamed: a bundle file that exists is complete.
    const tmp = `${f.bundle}.partial`;
    await runChecked(
      bundleArgv.map((a) => (a === f.bundle ? tmp : a)),
      `git bundle of ${rel}`,
      { signal: ctx.signal },
    );
    // Only ever over a regular file, as every output (../files/atomic.ts).
    refuseNonFile(f.bundle);
    await rename(tmp, f.bundle);
    bundleSha256 = await sha256File(f.bundle);
  }
  let hooksSha256 = '';
  if (await exists(join(repo, 'custom_hooks'))) {
    await runChecked(hooksArgv, `custom hooks of ${rel}`, { signal: ctx.signal });
    hooksSha256 = await sha256File(f.hooks);
  }
  cp.setRepo(rel, 'bundled', ctx.now(), { bundleSha256, hooksSha256, refs });
}

/** Restores one repository; false when it failed (recorded with the reason). */
async function restoreRepo(ctx: MethodContext, backupDir: string, row: CopyRepoRow): Promise<boolean> {
  const cp = ctx.checkpoint!;
  const { host, path } = ctx.plan.copy.target;
  const f = backupFiles(backupDir, row.rel);
  const target = posix.join(path, row.rel);
  const expected: RefMap = row.refs ?? {};
  const fail = (error: string) => {
    cp.setRepo(row.rel, 'failed', ctx.now(), { error });
    return false;
  };
  // Already in place (a restore whose checkpoint update was lost to a kill): verified, not redone.
  const present = await readRefs(host, target, ctx.signal);
  if (present !== null) {
    if (compareRefs(row.rel, expected, present).length > 0)
      return fail(`${target} exists on the target with other refs`);
    cp.setRepo(row.rel, 'restored', ctx.now());
    return true;
  }
  if (row.bundleSha256 && (await sha256File(f.bundle)) !== row.bundleSha256)
    return fail(`bundle ${f.bundle} does not match the manifest's checksum`);
  if (row.hooksSha256 && (await sha256File(f.hooks)) !== row.hooksSha256)
    return fail(`custom hooks ${f.hooks} do not match the manifest's checksum`);
  const tmp = `${target}.shardmove-restore`;
  let bundle = f.bundle;
  let hooks = f.hooks;
  if (host !== null) {
    // Staged next to the repository on the target, removed once it is in place.
    bundle = `${target}.shardmove-bundle`;
    hooks = `${target}.shardmove-hooks.tar`;
    const stage = async (from: string, to: string) =>
      runChecked(scriptArgv(host, `mkdir -p ${shq(posix.dirname(to))} && cat > ${shq(to)}`), `sending ${from}`, {
        signal: ctx.signal,
        stdin: createReadStream(from),
      });
    if (row.bundleSha256) await stage(f.bundle, bundle);
    if (row.hooksSha256) await stage(f.hooks, hooks);
  }
  const script = [
    'set -e',
    `rm -rf ${shq(tmp)}`,
    `mkdir -p ${shq(posix.dirname(target))}`,
    row.bundleSha256
      ? `git clone --mirror --quiet ${shq(bundle)} ${shq(tmp)} && git --git-dir=${shq(tmp)} remote remove origin`
      : `git init --bare --quiet ${shq(tmp)}`,
    ...(row.hooksSha256 ? [`tar -C ${shq(tmp)} -xf ${shq(hooks)}`] : []),
    `if [ -e ${shq(target)} ]; then echo 'target appeared meanwhile' >&2; exit 3; fi`,
    `mv ${shq(tmp)} ${shq(target)}`,
    ...(host !== null ? [`rm -f ${shq(bundle)} ${shq(hooks)}`] : []),
  ].join('\n');
  try {
    await runScript(host, script, `restoring ${row.rel}`, { signal: ctx.signal });
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    return fail(err instanceof Error ? err.message : String(err));
  }
  const restored = await readRefs(host, target, ctx.signal);
  const diffs =
    restored === null ? ['not readable after restore'] : compareRefs(row.rel, expected, restored).map(formatDifference);
  if (diffs.length > 0) return fail(`restored refs differ from the manifest: ${diffs.join('; ')}`);
  cp.setRepo(row.rel, 'restored', ctx.now());
  return true;
}

/** manifest.json in the backup directory: every repository, its files, checksums and refs. */
async function writeManifest(ctx: MethodContext, backupDir: string, rows: readonly CopyRepoRow[]): Promise<void> {
  const manifest = {
    version: 1,
    plan: ctx.plan.name,
    source: ctx.plan.copy.source.path,
    written_at: new Date(ctx.now()).toISOString(),
    repositories: rows.map((r) => ({
      path: r.rel,
      bytes: r.bytes,
      state: r.state,
      bundle: r.bundleSha256 ? `${r.rel}.bundle` : null,
      bundle_sha256: r.bundleSha256 || null,
      custom_hooks: r.hooksSha256 ? `${r.rel}.custom_hooks.tar` : null,
      custom_hooks_sha256: r.hooksSha256 || null,
      refs: r.refs,
      ...(r.error ? { error: r.error } : {}),
    })),
  };
  const file = join(backupDir, 'manifest.json');
  // Through an exclusive temporary file (a predictable `.partial` name could be a planted symlink),
  // and only ever over a regular file (../files/atomic.ts).
  writeFileAtomic(file, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o644 });
}
