/**
 * What commands about a plan's checkpoint need of the plan: its name and `checkpoint:` field (which
 * say where the checkpoint is) and, when the plan loads, its concurrency. None of them needs
 * credentials, so secrets are not resolved, and a plan whose other ${VAR}s are not set in this
 * shell still names its checkpoint.
 */
import { loadPlan, readPlanHead } from '../plan/load.js';
import { checkpointProblem } from '../plan/checkpoint-field.js';
import { existsSync } from 'node:fs';
import { checkpointPlaceOf, locateCheckpoint, otherCheckpointNote } from '../runtime/paths.js';
import { assertCheckpointOfPlan } from '../runtime/ownership/plan-owner.js';
import { openExistingCheckpoint } from '../runtime/status.js';
import type { CommandContext } from './context.js';
import { fixedConcurrency } from '../plan/concurrency-field.js';

export interface PlanIdentity {
  name: string;
  /** The plan's `checkpoint:` field as written; undefined when it has none. */
  checkpoint: string | undefined;
  /** `move.concurrency`; null when the plan could only be read for its name. */
  concurrency: number | null;
  /** The plan's hash; null when the plan could only be read for its name. */
  hash: string | null;
}

export async function readPlanIdentity(file: string, ctx: CommandContext): Promise<PlanIdentity> {
  try {
    const { plan, hash } = await loadPlan(file, { env: ctx.env, cwd: ctx.cwd, resolveSecrets: false });
    return {
      name: plan.name,
      checkpoint: plan.checkpoint ?? undefined,
      concurrency: fixedConcurrency(plan.move.concurrency),
      hash,
    };
  } catch (err) {
    // Other ${VAR}s (the URL) may be unset in this shell: fall back to the plan's `name` and
    // `checkpoint` fields, read within the loader's limits. Without a name, or with a checkpoint
    // field the loader would refuse, the original error says more than a guess would.
    const head = await readPlanHead(file, ctx.cwd);
    if (head?.name === undefined) throw err;
    if (head.checkpoint !== undefined && checkpointProblem(head.checkpoint) !== undefined) throw err;
    return { name: head.name, checkpoint: head.checkpoint as string | undefined, concurrency: null, hash: null };
  }
}

/**
 * The real run's checkpoint a command about a plan looks at (status, report, control, unlock):
 * `--state FILE` as given, else where the plan keeps it (runtime/paths.ts). Also the plan's
 * concurrency when known. Refuses (SHARDMOVE_PLAN_CHANGED, exit 4, as `run` does) a checkpoint of
 * another plan (runtime/ownership/plan-owner.ts); with `--state` and a plan that cannot be read at all, there
 * is no plan to compare with, and the checkpoint is taken as named.
 */
export async function resolveRunCheckpoint(
  opts: { plan: string; state?: string | undefined },
  ctx: CommandContext,
): Promise<{ file: string; planConcurrency: number | null }> {
  if (opts.state) {
    const place = locateCheckpoint({
      planFile: opts.plan,
      planName: '',
      statePath: opts.state,
      role: 'run',
      cwd: ctx.cwd,
    });
    const plan = await readPlanIdentity(opts.plan, ctx).catch(() => null);
    if (plan) refuseOtherPlans(place.file, opts.plan, plan, ctx);
    return { file: place.file, planConcurrency: null };
  }
  const plan = await readPlanIdentity(opts.plan, ctx);
  const place = checkpointPlaceOf(plan, { planFile: opts.plan, cwd: ctx.cwd }, 'run');
  const note = otherCheckpointNote(place);
  if (note) ctx.stderr.write(`note: ${note}\n`);
  refuseOtherPlans(place.file, opts.plan, plan, ctx);
  return { file: place.file, planConcurrency: plan.concurrency };
}

/**
 * Throws when the checkpoint at `file` (if there is one) is another plan's. A revert's checkpoint
 * named with --state is its forward run's plan's, and is judged the same way.
 */
export function refuseOtherPlans(file: string, planFile: string, plan: PlanIdentity, ctx: CommandContext): void {
  if (!existsSync(file)) return;
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    assertCheckpointOfPlan(store, file, { file: planFile, cwd: ctx.cwd, name: plan.name, hash: plan.hash });
  } finally {
    store.close();
  }
}
