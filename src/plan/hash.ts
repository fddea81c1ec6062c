/**
 * The plan's identity for resume: a checkpoint remembers the hash of the plan it was started with,
 * and `run` refuses to continue under a changed plan. Credentials are left out entirely (values,
 * variable names and file paths alike), so rotating a token, say after a revocation, or moving it
 * from ${VAR} to a file, is not a plan change; so are where the checkpoint lives and where the
 * run's events are sent. Every other field, defaults included, is in.
 */
import { createHash } from 'node:crypto';
import { DEFAULT_EXPOSURE_BUDGET } from './queue-ahead-field.js';
import { DEFAULT_MIN_INTERVAL_MS, PLAN_DEFAULTS } from './schema.js';
import type { Plan } from './types.js';
import type { MoveSelect, SelectEntry } from './values.js';

/** The normalised plan without its credentials: what the hash covers. */
export function planHashInput(plan: Plan): unknown {
  // How long the run holds for an outage moves nothing: raising it to resume after exit 7 is no change of plan.
  const { credentials: _credentials, outageWaitMs: _outageWaitMs, ...instance } = plan.instance;
  // The Prometheus token is a credential too: rotating it is no change of plan.
  const prometheus = plan.prometheus ? { ...plan.prometheus, token: undefined } : plan.prometheus;
  // One destination hashes as the single name it was before `move.to` took a list, and
  // `queue_ahead`, `exposure_budget` and `order` count only away from their defaults:
  // older checkpoints resume as they were.
  const { queueAhead, exposureBudget, order, ...rest } = plan.move;
  const base = {
    ...rest,
    ...(queueAhead === 0 ? {} : { queueAhead }),
    ...(exposureBudget === undefined || exposureBudget === null || exposureBudget === DEFAULT_EXPOSURE_BUDGET
      ? {}
      : { exposureBudget }),
    ...(order === undefined || order === null || order === 'together' ? {} : { order }),
  };
  const to = plan.move.to.length === 1 ? { ...base, to: plan.move.to[0] } : base;
  // `move.select` counts by the names it holds: not where they are written, nor where its file is.
  const move = plan.move.select ? { ...to, select: selectHashInput(plan.move.select) } : to;
  // Where the checkpoint lives says nothing of what the run does: moving it is no change of plan;
  // nor where its events are sent (notify), which also holds webhook tokens.
  const { checkpoint: _checkpoint, notify: _notify, ...fields } = plan;
  return { ...fields, instance, prometheus, move, poll: pollHashInput(plan.poll) };
}

/** The names of a selection, without their positions or the select file's path. */
function selectHashInput(select: MoveSelect): Record<string, unknown> {
  const refs = (list: readonly SelectEntry[]) => list.map((e) => e.ref);
  return {
    namespaces: refs(select.namespaces),
    projects: refs(select.projects),
    exclude: refs(select.exclude),
    file: select.file ? refs(select.file.entries) : null,
  };
}

/**
 * The poll section in the form the hash had before the stuck limit was split in two (scheduled and
 * running), so upgrading shardmove does not make every checkpoint's plan a "changed plan": the
 * running limit keeps the key of `stuck_after` (its deprecated name), and the later fields count
 * only when they differ from what a plan gets without writing them (the default; for the size term
 * also 0, which a plan still using `stuck_after` gets). A change between those two size terms
 * alone is therefore not a plan change: it moves nothing, it only changes when a move is called
 * stuck.
 */
function pollHashInput(poll: Plan['poll']): Record<string, number> {
  const { stuckScheduledAfterMs, stuckRunningAfterMs, stuckRunningPerGbMs, minIntervalMs, ...rest } = poll;
  const out: Record<string, number> = { ...rest, stuckAfterMs: stuckRunningAfterMs };
  // `poll.min_interval`, likewise: counts only away from the default a plan gets without writing it.
  if (minIntervalMs !== Math.min(DEFAULT_MIN_INTERVAL_MS, poll.intervalMs)) out['minIntervalMs'] = minIntervalMs;
  if (stuckScheduledAfterMs !== PLAN_DEFAULTS.poll.stuckScheduledAfterMs)
    out['stuckScheduledAfterMs'] = stuckScheduledAfterMs;
  if (stuckRunningPerGbMs !== PLAN_DEFAULTS.poll.stuckRunningPerGbMs && stuckRunningPerGbMs !== 0)
    out['stuckRunningPerGbMs'] = stuckRunningPerGbMs;
  return out;
}

/** JSON with object keys sorted at every level, so the hash ignores field order and formatting. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** sha256 (hex) of the canonical JSON of the plan without credentials. */
export function hashPlan(plan: Plan): string {
  return createHash('sha256')
    .update(canonicalJson(planHashInput(plan)))
    .digest('hex');
}
