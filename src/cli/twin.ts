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
import { basename, dirname, resolve } from 'node:path';
import { readPlanFile } from '../plan/load.js';
import { formatApproxDuration } from '../report/summary.js';
import { checkpointPlaceOf, otherCheckpointNote } from '../runtime/paths.js';
import { shellWord } from '../shared/shell-word.js';
import { assertCheckpointOfPlan } from '../runtime/ownership/plan-owner.js';
import { lockHolder, openExistingCheckpoint } from '../runtime/status.js';
import { LockedError } from '../store/errors.js';
import { TWIN_ADMIN_TOKEN } from '../twin/seed-text.js';
import {
  TWIN_TOKEN_VAR,
  TWIN_URL_VAR,
  rehearsalPlanFor,
  renderRehearsalPlan,
  urlFileFor,
} from '../twin/rehearsal-plan.js';
import type { RehearsalPlan } from '../twin/rehearsal-plan.js';
import { itemsFileFor, twinConcurrency, writeTwin } from '../twin/twin.js';
import type { CommandContext } from './context.js';
import { EXIT, clockOf } from './context.js';
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
  const place = checkpointPlaceOf(plan, { planFile: opts.plan, statePath: opts.state, cwd: ctx.cwd }, 'dry-run');
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
      [rehearsalPlanFor(out), `${rehearsalPlanFor(out)} (the rehearsal plan of --out ${out})`],
    ],
    [[planFile, `the plan ${planFile}`], ...checkpointFiles(file)],
  );
  // Neither is ever anything but a regular file, even with --force (src/cli/outputs.ts).
  checkOutputPath('twin', '--out', opts.out, ctx);
  checkOutputPath('twin', 'the items file of --out', itemsFileFor(out), ctx);
  const started = clockOf(ctx).now();
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    // Another plan's dry run is no twin of this plan's instance, and the rehearsal plan is this plan's.
    assertCheckpointOfPlan(store, file, { file: opts.plan, cwd: ctx.cwd, name: plan.name, hash: plan.hash });
    const holder = lockHolder(store);
    // A dry run going on now may have listed part of a storage so far.
    if (holder?.alive) throw new LockedError(file, holder, clockOf(ctx).now());
    const rehearsal = await rehearsalOf(opts.plan, plan.name, out, file, ctx);
    const seedArg = shellWord(opts.out);
    // On a free port (--port 0): the sandbox writes the URL it took to a file beside the seed, which
    // the run reads; a fixed port would be refused wherever something already listens on it.
    const rehearsalLines = (seed: string, urlFile: string, planArg: string | null) => [
      `shardmove sandbox --seed ${seed} --port 0 --url-file ${urlFile} --speed 100 --workers ${twinConcurrency(store, plan.concurrency)}`,
      ...('problem' in rehearsal
        ? [`no rehearsal command: ${rehearsal.problem}`]
        : [
            `${TWIN_URL_VAR}="$(cat ${urlFile})" ${TWIN_TOKEN_VAR}=${TWIN_ADMIN_TOKEN} shardmove run ${planArg}`,
            `(in another shell once the sandbox says it is ready: the plan, reading its instance from these two variables only, with a checkpoint of its own: ${rehearsal.checkpoint} beside it${rehearsal.removed.length > 0 ? `; left out: ${rehearsal.removed.join(', ')}` : ''})`,
          ]),
    ];
    const twin = writeTwin({
      store,
      planName: plan.name,
      concurrency: plan.concurrency,
      out,
      ...('problem' in rehearsal ? {} : { rehearsal: { file: rehearsalPlanFor(out), text: rehearsal.text } }),
      dryRunCommand: `shardmove run ${shellWord(opts.plan)} --dry-run${opts.state ? ` --state ${shellWord(opts.state)}` : ''}`,
      // In the seed's header, from the seed's folder.
      rehearsalLines: rehearsalLines(
        'THIS_FILE',
        shellWord(basename(urlFileFor(out))),
        shellWord(basename(rehearsalPlanFor(out))),
      ),
    });
    const { input } = twin;
    const lines = [
      `twin written: ${twin.seedFile}`,
      `  items: ${twin.items} in ${twin.itemsFile}${twin.items === 0 ? " (the dry run found nothing on the plan's sources)" : ''}`,
      ...('problem' in rehearsal ? [] : [`  rehearsal plan: ${rehearsalPlanFor(out)}`]),
      ...input.counts.map(
        (c) =>
          `  ${c.kind} on ${c.source}: ${c.items}${c.kind === 'projects' ? `, ${c.hiddenUnknown > 0 ? 'hidden unknown' : `${c.hidden} hidden`}, ${c.pendingUnknown > 0 ? 'pending deletion unknown' : `${c.pendingDelete} pending deletion`}` : ''}`,
      ),
      `  names replaced; release ${input.version ?? 'unknown'}; what was not carried is listed in the seed's header`,
      `estimate (dry run): ${formatApproxDuration(input.estimate.ms)} at ${input.estimate.concurrency} moves in flight`,
      'rehearse the same plan on it (docs/sandbox.md, "Rehearsing on a twin of your instance"):',
      ...rehearsalLines(seedArg, shellWord(urlFileFor(opts.out)), shellWord(rehearsalPlanFor(opts.out))).map(
        (l) => `  ${l}`,
      ),
      `(written in ${formatApproxDuration(clockOf(ctx).now() - started)})`,
    ];
    ctx.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  } finally {
    store.close();
  }
}

/**
 * The rehearsal plan for the plan file, or why there is none: a copy that can reach only the twin
 * (../twin/rehearsal-plan.ts), whose checkpoint is none of the plan's own.
 */
async function rehearsalOf(
  planFile: string,
  name: string,
  out: string,
  checkpoint: string,
  ctx: CommandContext,
): Promise<RehearsalPlan | { problem: string }> {
  const { abs, text } = await readPlanFile(planFile, ctx.cwd);
  const file = rehearsalPlanFor(out);
  const made = renderRehearsalPlan(text, { planFile: abs, planName: name, file, env: ctx.env });
  if ('problem' in made) return { problem: `the plan pointed at the twin would not load: ${made.problem}` };
  const own = resolve(dirname(file), made.checkpoint);
  const theirs = [checkpoint, checkpoint.replace(/\.dry-run\.db$/, '.db')];
  if ([own, own.replace(/\.db$/, '.dry-run.db')].some((f) => theirs.includes(f)))
    return {
      problem: `the rehearsal's checkpoint ${own} would be the plan's own ${checkpoint}: write the twin elsewhere`,
    };
  return made;
}

/** Refuses (exit 2) an --out the seed, its items file or rehearsal plan cannot be written to, or would replace without --force. */
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
  for (const f of [out, itemsFileFor(out), rehearsalPlanFor(out)]) {
    const st = statOrNull(f);
    if (st === null) continue;
    if (st.isDirectory()) throw new ArgsError(`twin: ${f} is a directory; --out names the seed file`);
    if (!force)
      throw new ArgsError(
        `twin: ${f} exists; pass --force to replace it (the seed, its items file and its rehearsal plan are replaced together)`,
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
