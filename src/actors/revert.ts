/**
 * The run machine's actors for `shardmove revert`: the same seven, three of them changed by what a
 * revert is. Pre-flight also seeds the revert's items into its checkpoint (under the run lock, once);
 * the weights step puts back the weights the forward run recorded before its first write, so new
 * projects stop landing on the storages being emptied; the drain moves the given rows only, never
 * listing a source; verification reads every item the revert moved and checks it is back where it
 * came from.
 */
import { verifyContent } from './verify-content.js';
import type { StaysOutput, VerifyOutput, WeightsOutput } from '../machine/types.js';
import { STAYS_LISTED } from '../machine/types.js';
import type { Kind } from '../plan/types.js';
import { locate } from './drain/locate.js';
import type { Location } from './drain/locate.js';
import { abortError } from './errors.js';
import type { RevertItem, RevertSeedList, RevertSet } from './revert-items.js';
import { isSeeded, seedRevert } from './revert-items.js';
import type { ActorDeps, RunActors } from './types.js';
import { laterWeightChange, restoreTarget, weightsChangedError, writeRestoredWeights } from './weight-changes.js';
import { holdForStop, waitForGates } from './write-gate.js';
import type { RevertSeedStore } from '../store/views.js';

export interface RevertActorsOptions {
  /** The items to seed when the checkpoint has none yet (null: seeded by an earlier process). */
  seed: RevertSet | null;
  /** When the per-item reads behind `seed` were made (ms since epoch). */
  readAt: number;
  drains: { kinds: Kind[]; sources: string[] };
  /** The forward run's checkpoint, named in the `revert.seeded` event. */
  forward: string;
  /** The weights the forward run found before its first write (null: it recorded none). */
  forwardWeights: Record<string, number> | null;
  /** The weights the forward run may have left (./weight-changes.ts `weightsLeftBy`). */
  weightsLeft: Record<string, number>[];
  /** Write the weights of before the forward run over a later change. */
  overwriteWeights: boolean;
  /** The command that runs the revert again, for the refusal of a later change. */
  command: string;
  /** `revert --only`: the list seeded (recorded in `revert.seeded`). */
  list?: RevertSeedList;
  /** Leave the weights as they are (a revert of part of the drain: its destinations stay in use). */
  keepWeights?: boolean;
  /** The forward run's items no revert took (not in the list): they stay on the destination, and verification says so. */
  outside?: readonly RevertItem[];
}

/** The real actors with a revert's pre-flight, weights, drain and verify. */
export function revertActors(base: RunActors, o: RevertActorsOptions): RunActors {
  return {
    ...base,
    preflight: async (deps) => {
      const out = await base.preflight({ ...deps, itemsGiven: true });
      // Seeding skips the items an earlier seed took: a restored pre-flight, or a second list, adds only new ones.
      if (o.seed && (o.seed.items.length + o.seed.skipped.length > 0 || !isSeeded(deps.store, o.drains))) {
        seedRevert(deps.store, o.seed, o.drains, {
          forward: o.forward,
          readAt: o.readAt,
          now: deps.clock.now(),
          ...(o.list ? { list: o.list } : {}),
        });
      }
      return out;
    },
    weights: async (deps) =>
      o.keepWeights
        ? {
            current: await deps.api.getWeights(),
            written: false,
            warnings: [KEPT_WEIGHTS],
          }
        : restoreForwardWeights(deps, o.forwardWeights, {
            left: o.weightsLeft,
            overwrite: o.overwriteWeights,
            command: o.command,
          }),
    // Every item is moved by its own POST: a kind the forward run followed by move records (its
    // storage not exposed) is read item by item here, and the POST decides when that says nothing.
    drain: (deps, input) => base.drain({ ...deps, itemsGiven: true }, { ...input, access: 'listing', ahead: null }),
    verify: async (deps) => {
      const own = await verifyReverted(deps);
      const withStays = o.outside && o.outside.length > 0 ? { ...own, stays: outsideStays(o.outside) } : own;
      // The sampled projects' content (verify.content) is compared as on the way out.
      const content = await verifyContent(deps);
      if (!content) return withStays;
      return {
        ...withStays,
        ok: withStays.ok && content.output.differ === 0,
        problems: [...withStays.problems, ...content.problems],
        content: content.output,
      };
    },
  };
}

/** Said by a `revert --only`, whose weights step writes nothing. */
export const KEPT_WEIGHTS =
  'revert --only moves back part of the drain: the weights were left as they are (a plain revert, or shardmove weights restore, puts back those of before the forward run)';

/** The forward run's items no revert took, as what stays on the revert's sources: not in the list. */
function outsideStays(outside: readonly RevertItem[]): StaysOutput {
  const counts = new Map<string, number>();
  for (const it of outside) counts.set(it.from, (counts.get(it.from) ?? 0) + 1);
  return {
    listed: true,
    total: outside.length,
    bySource: [...counts.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([source, n]) => ({ source, why: 'not in the list' as const, n })),
    items: outside
      .slice(0, STAYS_LISTED)
      .map((it) => ({ kind: it.kind, id: it.id, path: it.name, source: it.from, why: 'not in the list' as const })),
  };
}

/**
 * Puts back the forward run's recorded weights (a PUT of the whole hash), unless they are already in
 * force. Read again just before the PUT: weights changed since the forward run left them (`guard.left`)
 * are not overwritten without `guard.overwrite`, even when they changed after the revert asked.
 */
export async function restoreForwardWeights(
  deps: ActorDeps<RevertSeedStore>,
  previous: Record<string, number> | null,
  guard: { left: readonly Record<string, number>[]; overwrite: boolean; command: string },
): Promise<WeightsOutput> {
  const { api, log } = deps;
  if (!previous) {
    return {
      current: await api.getWeights(),
      written: false,
      warnings: ['the forward run recorded no weights: the weights were left as they are'],
    };
  }
  await waitForGates(deps, 'writing the weights');
  const current = await api.getWeights();
  const { target, changes } = restoreTarget(previous, current);
  const later = guard.overwrite ? null : laterWeightChange(previous, guard.left, current);
  if (later) throw weightsChangedError(later, 'the forward run', `${guard.command} --overwrite-weights`);
  if (changes.length === 0) {
    log.info({ weights: current }, 'weights already those before the forward run');
    return { current, written: false, warnings: [] };
  }
  // The read above can take seconds: a stop asked for meanwhile keeps the PUT from being sent.
  await holdForStop(deps, 'writing the weights');
  const readBack = await writeRestoredWeights(api, target);
  deps.store.appendEvent('weights.restored', { from: current, to: readBack }, deps.clock.now());
  log.info({ from: current, to: readBack }, 'weights of before the forward run restored');
  return { current: readBack, written: true, warnings: [] };
}

/** Problems listed before the rest are summed up as a count. */
const MAX_LISTED_PROBLEMS = 20;
/** Items read at once. */
const PARALLEL_READS = 8;
const ALL = Number.MAX_SAFE_INTEGER;

/**
 * Every item the revert moved (a move of its own ended finished or cleanup failed) is read on its
 * own, as the drain reads one (a hidden project through its move list): it must be on the storage it
 * came from before the forward run. A reviewed list's run (`by: 'list'`) is verified the same way:
 * each item it moved must be on the destination the list pinned. Quarantined items are the run's known leftovers (the report
 * lists them); skipped items were never the revert's to move.
 */
export async function verifyReverted(
  deps: ActorDeps<RevertSeedStore>,
  by: 'revert' | 'list' = 'revert',
): Promise<VerifyOutput> {
  const { store, plan } = deps;
  const entries: {
    kind: Kind;
    source: string;
    checked: number;
    back: number;
    wrong: number;
    unknown: number;
    quarantined: number;
  }[] = [];
  const problems: string[] = [];
  let more = 0;
  const say = (p: string) => (problems.length < MAX_LISTED_PROBLEMS ? problems.push(p) : more++);
  for (const kind of plan.move.kinds) {
    for (const source of plan.move.from) {
      const moved = store.itemsInState(kind, source, 'moved', ALL).filter((r) => r.moveId !== null);
      const quarantined = store.countStates(kind, source).quarantined;
      if (moved.length === 0 && quarantined === 0) continue;
      const e = { kind, source, checked: moved.length, back: 0, wrong: 0, unknown: 0, quarantined };
      for (let i = 0; i < moved.length; i += PARALLEL_READS) {
        if (deps.signal.aborted) throw abortError(deps.signal);
        const rows = moved.slice(i, i + PARALLEL_READS);
        const seen = await Promise.all(
          rows.map((row) => locate({ deps, kind, source: row.destination ?? source }, row.id)),
        );
        rows.forEach((row, j) => {
          const where = seen[j] as Location;
          const want = row.destination ?? '(no destination recorded)';
          if (where.at === 'source' && row.destination) e.back++;
          else if (where.at === 'elsewhere') {
            e.wrong++;
            say(`${kind} ${row.id} (${row.name}): on ${where.storage}, not back on ${want}`);
          } else if (where.at === 'unknown' && (row.moveState === 'finished' || row.moveState === 'cleanup failed')) {
            // The instance does not say where it is (no storage field): the move record is the evidence.
            e.back++;
          } else {
            e.unknown++;
            say(
              `${kind} ${row.id} (${row.name}): ${where.at === 'gone' ? 'deleted' : 'cannot be located'} after its move back to ${want}`,
            );
          }
        });
      }
      entries.push(e);
    }
  }
  if (more > 0) problems.push(`... and ${more} more`);
  return {
    ok: entries.every((e) => e.wrong === 0 && e.unknown === 0),
    perKindAndSource: entries.map((e) => ({
      kind: e.kind,
      source: e.source,
      by,
      checked: e.checked,
      back: e.back,
      wrong: e.wrong,
      unknown: e.unknown,
      quarantined: e.quarantined,
    })),
    problems,
  };
}
