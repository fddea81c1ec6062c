/**
 * Step 3, set weights: merge the plan's weights into the instance's, check the result, write it and
 * read it back. Split in two actors so the machine checkpoints the previous weights before any write
 * (a restore mid-write must not mistake the new weights for the old ones).
 */
import type { WeightsOutput } from '../machine/types.js';
import { checkMergedWeights } from '../plan/rules.js';
import type { ActorDeps } from './types.js';
import { holdForStop, waitForGates } from './write-gate.js';
import { StepError, WEIGHTS_INVALID, WEIGHTS_MISMATCH } from './errors.js';
import type { WeightsStore } from '../store/views.js';

/** Reads the instance's current weights (kept as the "previous" weights for the report and rollback). */
export async function readWeights(deps: Pick<ActorDeps<WeightsStore>, 'api'>): Promise<Record<string, number>> {
  return deps.api.getWeights();
}

function sameWeights(a: Record<string, number>, b: Record<string, number>, keys: Iterable<string>): boolean {
  for (const k of keys) if ((a[k] ?? 0) !== (b[k] ?? 0)) return false;
  return true;
}

/** Merges, checks, writes (not in a dry run, not when already equal) and verifies the weights. */
export async function applyWeights(
  deps: Pick<ActorDeps<WeightsStore>, 'api' | 'plan' | 'log' | 'dryRun'> &
    Partial<Pick<ActorDeps<WeightsStore>, 'gate' | 'store' | 'clock' | 'signal' | 'stopAsked'>>,
  _input: { previous: Record<string, number> },
): Promise<WeightsOutput> {
  const { api, plan, log } = deps;
  // The weights are a write: outside every window, or while a rule holds, they wait like a move.
  if (deps.gate && deps.store && deps.clock && deps.signal) {
    await waitForGates(
      { ...deps, gate: deps.gate, store: deps.store, clock: deps.clock, signal: deps.signal },
      'writing the weights',
    );
  }
  const current = await api.getWeights();
  const { merged, problems } = checkMergedWeights(current, plan.weights, plan);
  if (problems.length > 0)
    throw new StepError(WEIGHTS_INVALID, `the merged weights are unsafe: ${problems.join('; ')}`);
  const keys = new Set([...Object.keys(current), ...Object.keys(merged)]);
  if (sameWeights(current, merged, keys)) {
    log.info({ weights: merged }, 'weights already set');
    return { current: merged, written: false, warnings: [] };
  }
  if (deps.dryRun) {
    log.info({ from: current, to: merged }, 'weights would be written');
    return { current: merged, written: false, warnings: [] };
  }
  // The read above can take seconds: a stop asked for meanwhile keeps the PUT from being sent.
  if (deps.signal && deps.clock)
    await holdForStop({ ...deps, signal: deps.signal, clock: deps.clock }, 'writing the weights');
  await api.setWeights(merged);
  const readBack = await api.getWeights();
  if (!sameWeights(readBack, merged, keys)) {
    throw new StepError(
      WEIGHTS_MISMATCH,
      `the instance reports weights ${JSON.stringify(readBack)} after writing ${JSON.stringify(merged)}`,
    );
  }
  log.info({ from: current, to: readBack }, 'weights written');
  return { current: readBack, written: true, warnings: [] };
}
