/**
 * `run PLAN --only FILE`: moves exactly the items of a reviewed list (./items-format.ts), made by
 * `run --dry-run --items` under the same plan, and nothing else. The list is read and checked before
 * anything is contacted: every line well formed and unchanged (its check), no item twice, each one
 * the plan moves (exit 2); made under the plan as it is now (exit 4, both hashes named, and the
 * fields that changed when the dry run that made it is still beside the plan). Then it is an
 * ordinary run (lock, lease, cap, windows, throttle, retries, events, report), whose pre-flight seeds
 * the list into the checkpoint and whose drains move the seeded rows only (../actors/given-list.ts).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { givenListActors } from '../../actors/index.js';
import { canonicalJson, planHashInput } from '../../plan/hash.js';
import type { LoadedPlan } from '../../plan/load.js';
import { diffPlanRecords, formatPlanChanges } from '../../plan/plan-diff.js';
import { ITEMS_FILE_INVALID, ITEMS_OTHER_PLAN, RuntimeError } from '../errors.js';
import { readItemsFile } from './items-file.js';
import type { ItemsFormat, ItemsList } from './items-format.js';
import { digestOf } from './items-format.js';
import { locateCheckpoint } from '../paths.js';
import { shellWord } from '../../shared/shell-word.js';
import { executeRun } from '../run.js';
import { openExistingCheckpoint } from '../status.js';
import type { RunOptions, RunOutcome, RuntimeServices } from '../types.js';

export interface OnlyOptions extends RunOptions {
  /** The list as the operator named it. */
  onlyFile: string;
  /** `--items-format`; null: from the file's name, else its first character. */
  format: ItemsFormat | null;
}

/** Applies the reviewed list; throws SHARDMOVE_ITEMS_FILE_INVALID, SHARDMOVE_ITEMS_OTHER_PLAN, or what `executeRun` throws. */
export async function executeOnly(opts: OnlyOptions, injected: Partial<RuntimeServices> = {}): Promise<RunOutcome> {
  const services: RuntimeServices = { ...(await import('../services.js')).defaultServices(), ...injected };
  const loaded = await services.loadPlan(opts.planFile, { env: opts.env, cwd: opts.cwd });
  const list = readItemsFile(resolve(opts.cwd, opts.onlyFile), opts.onlyFile, opts.format);
  if (list.planHash !== loaded.hash) throw otherPlan(opts, loaded, list);
  refuseWhatThePlanDoesNotMove(opts.onlyFile, loaded, list);
  const digest = digestOf(list.planHash, list.items);
  const given = { digest, file: opts.onlyFile };
  return executeRun(
    { ...opts, given },
    {
      ...services,
      loadPlan: async () => loaded,
      actors: givenListActors(services.actors, {
        items: list.items,
        list: { ...given, planHash: list.planHash, items: list.items.length },
      }),
    },
  );
}

/**
 * The list's items against the plan: a line whose check matches was written under this plan's hash,
 * so this holds for every list a dry run wrote; a list that names nothing is refused too.
 */
function refuseWhatThePlanDoesNotMove(shown: string, loaded: LoadedPlan, list: ItemsList): void {
  const { move } = loaded.plan;
  const problems: string[] = [];
  for (const it of list.items) {
    const at = `${shown}:${it.line}: ${it.kind} ${it.id}`;
    if (!move.kinds.includes(it.kind)) problems.push(`${at}: the plan does not move ${it.kind} (move.kinds)`);
    else if (!move.from.includes(it.source))
      problems.push(`${at}: ${it.source} is not a source of the plan (move.from)`);
    else if (!move.to.includes(it.destination))
      problems.push(`${at}: ${it.destination} is not a destination of the plan (move.to)`);
  }
  if (list.items.length === 0) problems.push(`${shown}: the list names no item: there is nothing to move`);
  if (problems.length > 0)
    throw new RuntimeError(
      ITEMS_FILE_INVALID,
      `${shown} cannot be applied under this plan; nothing was read from the instance or written:\n${problems
        .slice(0, 30)
        .map((p) => `  ${p}`)
        .join('\n')}${problems.length > 30 ? `\n  ... and ${problems.length - 30} more` : ''}`,
    );
}

/** The refusal of a list made under another plan: both hashes, and what changed when that can be told. */
function otherPlan(opts: OnlyOptions, loaded: LoadedPlan, list: ItemsList): RuntimeError {
  const changes = changesSince(opts, loaded, list.planHash);
  const what =
    changes === null
      ? '(the dry run that made it is not beside the plan any more, so which fields changed cannot be told)'
      : changes.length > 0
        ? `changed since:\n${changes.map((c) => `  ${c}`).join('\n')}\n`
        : '';
  return new RuntimeError(
    ITEMS_OTHER_PLAN,
    `refusing: ${opts.onlyFile} was made under plan hash ${list.planHash}, and ${opts.planFile} hashes ${loaded.hash} now; ${what}` +
      `${what.endsWith('\n') ? '' : ' '}The list applies exactly what was reviewed under its plan: make it again with \`shardmove run ${shellWord(opts.planFile)} --dry-run --items ${shellWord(opts.onlyFile)} --force\`, review it, and apply that. Nothing was written`,
  );
}

/** The fields that changed since the dry run that made the list, from its checkpoint beside the plan, or null. */
function changesSince(opts: OnlyOptions, loaded: LoadedPlan, listHash: string): string[] | null {
  let file: string;
  try {
    file = locateCheckpoint({
      planFile: opts.planFile,
      planName: loaded.plan.name,
      planCheckpoint: loaded.plan.checkpoint,
      role: 'dry-run',
      cwd: opts.cwd,
    }).file;
  } catch {
    return null;
  }
  if (!existsSync(file)) return null;
  try {
    const store = openExistingCheckpoint(file, { readOnly: true });
    try {
      const saved = store.loadRun();
      if (!saved?.plan || saved.planHash !== listHash) return null;
      const now = canonicalJson(loaded.hashInput ?? planHashInput(loaded.plan));
      return formatPlanChanges(diffPlanRecords(saved.plan, now));
    } finally {
      store.close();
    }
  } catch {
    return null;
  }
}
