/**
 * `shardmove twin PLAN [--state FILE] --out SEED.yaml [--force]`: a sandbox seed with the shape of
 * the instance the plan's finished dry run saw (src/twin/). Reads the checkpoint only: no request,
 * no credential. Exit 0 written; 1 no checkpoint, an unusable one, no finished dry run in it, or a
 * failed write; 2 bad options (no --out, its directory missing, a file there without --force, or an
 * --out that is the plan, the checkpoint or a file SQLite keeps beside it, even with --force);
 * 4 a real run's checkpoint, or one a live run holds.
 */
import { accessSync, constants, statSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { formatApproxDuration } from '../report/summary.js';
import { locateCheckpoint, otherCheckpointNote } from '../runtime/paths.js';
import { lockHolder, openExistingCheckpoint } from '../runtime/status.js';
import { LockedError } from '../store/errors.js';
import { TWIN_ADMIN_TOKEN } from '../twin/seed-text.js';
import { itemsFileFor, writeTwin } from '../twin/twin.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';
import { ArgsError } from './errors.js';
import { checkOutputPath, checkpointFiles, refuseOutputsThatAreInputs, resolveOutputPath } from './outputs.js';
import { readPlanIdentity } from './plan-identity.js';

export interface TwinFlags {
  plan: string;
  state?: string;
  out?: string;
  force: boolean;
}

export async function runTwinCommand(opts: TwinFlags, ctx: CommandContext): Promise<number> {
  if (opts.out === undefined || opts.out === '')
    throw new ArgsError('twin: say where to write the seed: --out SEED.yaml (its items file is written beside it)');
  // Before the checkpoint is read: a place the seed cannot go, or files it would replace.
  const out = resolveOutputPath('twin', '--out', opts.out, ctx);
  checkTarget(out, opts.force);
  const plan = await readPlanIdentity(opts.plan, ctx);
  const place = locateCheckpoint({
    planFile: opts.plan,
    planName: plan.name,
    planCheckpoint: plan.checkpoint,
    statePath: opts.state,
    role: 'dry-run',
    cwd: ctx.cwd,
  });
  const file = place.file;
  const note = otherCheckpointNote(place);
  if (note) ctx.stderr.write(`note: ${note}\n`);
  // Never over what twin reads (src/cli/outputs.ts): --force replaces a seed, not a checkpoint.
  const planFile = resolve(ctx.cwd, opts.plan);
  refuseOutputsThatAreInputs(
    'twin',
    [
      [out, `--out ${out}`],
      [itemsFileFor(out), `${itemsFileFor(out)} (the items file of --out ${out})`],
    ],
    [[planFile, `the plan ${planFile}`], ...checkpointFiles(file)],
  );
  // Neither is ever anything but a regular file, even with --force (src/cli/outputs.ts).
  checkOutputPath('twin', '--out', opts.out, ctx);
  checkOutputPath('twin', 'the items file of --out', itemsFileFor(out), ctx);
  const started = Date.now();
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    const holder = lockHolder(store);
    // A dry run going on now may have listed part of a storage so far.
    if (holder?.alive) throw new LockedError(file, holder, Date.now());
    const saved = store.loadRun();
    if (saved && saved.planName !== plan.name) {
      ctx.stderr.write(
        `warning: ${file} was written by plan "${saved.planName}", not "${plan.name}"; the twin is of what that dry run saw\n`,
      );
    }
    const twin = writeTwin({ store, planName: plan.name, concurrency: plan.concurrency, out });
    const { input } = twin;
    const lines = [
      `twin written: ${twin.seedFile}`,
      `  items: ${twin.items} in ${twin.itemsFile}${twin.items === 0 ? " (the dry run found nothing on the plan's sources)" : ''}`,
      ...input.counts.map(
        (c) =>
          `  ${c.kind} on ${c.source}: ${c.items}${c.kind === 'projects' ? `, ${c.hiddenUnknown > 0 ? 'hidden unknown' : `${c.hidden} hidden`}, ${c.pendingUnknown > 0 ? 'pending deletion unknown' : `${c.pendingDelete} pending deletion`}` : ''}`,
      ),
      `  names replaced; release ${input.version ?? 'unknown'}; what was not carried is listed in the seed's header`,
      `estimate (dry run): ${formatApproxDuration(input.estimate.ms)} at ${input.estimate.concurrency} moves in flight`,
      'rehearse the same plan on it (docs/sandbox.md, "Rehearsing on a twin of your instance"):',
      `  shardmove sandbox --seed ${quote(opts.out)} --port 8081 --speed 100 --workers ${input.estimate.concurrency}`,
      `  GITLAB_URL=http://127.0.0.1:8081 GITLAB_TOKEN=${TWIN_ADMIN_TOKEN} shardmove run ${quote(opts.plan)} --state state/${plan.name}.twin.db`,
      `(written in ${formatApproxDuration(Date.now() - started)})`,
    ];
    ctx.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  } finally {
    store.close();
  }
}

/** A path as a shell reads it back. */
const quote = (s: string) => (/^[\w./=:-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** Refuses (exit 2) an --out the seed or its items file cannot be written to, or would replace without --force. */
function checkTarget(out: string, force: boolean): void {
  const dir = dirname(out);
  const dirStat = statOrNull(dir);
  if (dirStat === null) throw new ArgsError(`twin: --out ${out}: the directory ${dir} does not exist`);
  if (!dirStat.isDirectory()) throw new ArgsError(`twin: --out ${out}: ${dir} is not a directory`);
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    throw new ArgsError(`twin: --out ${out}: the directory ${dir} is not writable`);
  }
  for (const f of [out, itemsFileFor(out)]) {
    const st = statOrNull(f);
    if (st === null) continue;
    if (st.isDirectory()) throw new ArgsError(`twin: ${f} is a directory; --out names the seed file`);
    if (!force)
      throw new ArgsError(
        `twin: ${f} exists; pass --force to replace it (the seed and its items file are replaced together)`,
      );
  }
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}
