/**
 * A revert acts on the instance and under the plan the forward run used, never on another one. Two
 * checks, both before anything is written:
 *
 * - The plan, by the same identity `run` uses (src/plan/hash.ts: every field but the credentials,
 *   the instance URL included). A plan that differs from the forward run's is refused unless
 *   `--accept-plan-change`, naming the fields that differ when the forward checkpoint keeps its plan
 *   (the run row's, schema 17, compared as `run` compares it: src/plan/plan-diff.ts): the instance
 *   URL as recorded against the URL now first.
 * - The instance, by evidence rather than by address: it must hold the forward run's own moves (the
 *   move ids its checkpoint records, each for its item). Another instance behind the same URL, or
 *   one restored from a backup taken before the forward run, has none of them. No flag overrides
 *   this: a revert there would move that instance's repositories that happen to have the same ids.
 */
import { ApiHttpError } from '../../api/errors.js';
import type { InstanceApi } from '../../api/types.js';
import { canonicalJson, planHashInput } from '../../plan/hash.js';
import { diffPlanRecords } from '../../plan/plan-diff.js';
import type { PlanChange } from '../../plan/plan-diff.js';
import type { Plan } from '../../plan/types.js';
import type { SavedRun } from '../../store/types.js';
import { INSTANCE_CHANGED, PLAN_CHANGED, RuntimeError } from '../errors.js';
import type { RevertItem } from '../../actors/index.js';

/** Items named in a refusal before the rest are counted. */
const NAMED = 5;

/** A plan as loaded against a checkpoint's saved run, for the checks that refuse a changed plan. */
interface PlanCheck {
  saved: SavedRun | null;
  plan: Plan;
  hash: string;
  /** `--accept-plan-change` was given. */
  accept: boolean;
  /** The command that accepts the change, for the message. */
  again: string;
}

/**
 * Refuses (SHARDMOVE_PLAN_CHANGED, exit 4) a plan that differs from the forward run's, unless
 * accepted. Asked before the instance is contacted: another URL is refused without a request to it.
 */
export function checkForwardPlan(a: PlanCheck & { forwardFile: string }): void {
  if (a.accept || !a.saved || a.saved.planHash === a.hash) return;
  const changes = changesSince(a.saved, a.plan);
  throw planChanged(`the one the forward run in ${a.forwardFile} ran with`, 'the forward run', changes, a.again);
}

/**
 * Refuses (SHARDMOVE_PLAN_CHANGED, exit 4) a plan that differs from the one the revert's own
 * checkpoint runs under (which an earlier `--accept-plan-change` may have made differ from the
 * forward run's), unless accepted. `plan` is the plan as loaded: the revert's checkpoint keeps its
 * fields (and the revert's own hash of them, `revertHash`).
 */
export function checkRevertPlan(a: PlanCheck): void {
  if (a.accept || !a.saved || a.saved.planHash === revertHash(a.hash)) return;
  throw planChanged('the one this revert started under', 'this revert', changesSince(a.saved, a.plan), a.again);
}

/** The fields of `plan` that differ from the plan `saved` keeps, or null when it keeps none (before schema 17). */
function changesSince(saved: SavedRun, plan: Plan): PlanChange[] | null {
  return saved.plan ? diffPlanRecords(saved.plan, canonicalJson(planHashInput(plan))) : null;
}

/** `instance.url` of the plan a saved run keeps, when it keeps one. */
export function recordedUrlOf(saved: SavedRun | null): string | null {
  if (!saved?.plan) return null;
  const url = (JSON.parse(saved.plan) as { instance?: { url?: unknown } } | null)?.instance?.url;
  return typeof url === 'string' ? url : null;
}

function planChanged(than: string, by: string, changes: PlanChange[] | null, again: string): RuntimeError {
  const url = changes?.find((c) => c.path === 'instance.url');
  const rest = (changes ?? []).filter((c) => c !== url);
  const what: string[] = [];
  if (url) what.push(`the instance URL: ${url.from} as recorded by ${by}, ${url.to} now`);
  for (const c of rest.slice(0, 8)) what.push(`${c.path}: ${c.from} -> ${c.to}`);
  if (rest.length > 8) what.push(`and ${rest.length - 8} more`);
  const which =
    changes === null
      ? 'the checkpoint was written by a release that did not record the plan, so which fields differ cannot be told'
      : what.join('; ');
  return new RuntimeError(
    PLAN_CHANGED,
    `refusing: the plan differs from ${than} (${which}). ` +
      'A revert works on the instance and under the plan of its forward run. Nothing was written. ' +
      `If the change is intended: ${again} --accept-plan-change (the instance must still hold the forward run's moves)`,
  );
}

/** The hash a revert's own checkpoint records for a plan (`revert:` and the plan's hash). */
export function revertHash(hash: string): string {
  return `revert:${hash}`;
}

/**
 * Refuses (SHARDMOVE_INSTANCE_CHANGED, exit 4) when the instance has no record of the forward run's
 * moves for `unrecorded` items. `url` is the instance asked, `recordedUrl` the forward run's.
 */
export function assertRecorded(
  unrecorded: readonly RevertItem[],
  a: { url: string; recordedUrl: string | null; forwardFile: string; checked: number },
): void {
  if (unrecorded.length === 0) return;
  const named = unrecorded.slice(0, NAMED).map((i) => `${i.kind.slice(0, -1)} ${i.id}: move ${i.forwardMoveId}`);
  if (unrecorded.length > NAMED) named.push(`and ${unrecorded.length - NAMED} more`);
  const was =
    a.recordedUrl && a.recordedUrl !== a.url ? ` (the forward run worked on ${a.recordedUrl}, as recorded)` : '';
  throw new RuntimeError(
    INSTANCE_CHANGED,
    `refusing: ${a.url} is not the instance the forward run in ${a.forwardFile} moved items on${was}: ` +
      `of ${a.checked} item(s) checked, ${unrecorded.length} exist here without any record of the forward run's move (${named.join('; ')}). ` +
      'Another instance answers at this address, or it was restored from a backup taken before the forward run. Nothing was written. ' +
      "Point the plan's instance.url at the instance the forward run worked on",
  );
}

/** At most `n` items spread over `items` (first and last included). */
function spread<T>(items: readonly T[], n: number): T[] {
  if (items.length <= n) return [...items];
  return Array.from({ length: n }, (_, i) => items[Math.round((i * (items.length - 1)) / (n - 1))] as T);
}

/**
 * A few of the forward run's moves, asked of the instance one by one (the check of a revert that
 * resumes: its first process read every item). Returns the items whose move this instance does not
 * hold; an item deleted since (its move list answers 404) proves nothing either way.
 */
export async function unrecordedSample(
  api: InstanceApi,
  items: readonly RevertItem[],
  n = 6,
): Promise<{ checked: number; unrecorded: RevertItem[] }> {
  const sample = spread(items, n);
  const unrecorded: RevertItem[] = [];
  for (const item of sample) {
    const move = await api.getMove(item.kind, item.forwardMoveId);
    if (move) {
      if (move.itemId !== item.id) unrecorded.push(item);
      continue;
    }
    try {
      const moves = await api.listItemMoves(item.kind, item.id);
      if (!moves.some((m) => m.id === item.forwardMoveId)) unrecorded.push(item);
    } catch (err) {
      if (!(err instanceof ApiHttpError && err.status === 404)) throw err;
    }
  }
  return { checked: sample.length, unrecorded };
}
