/**
 * The face of actors/: the contract between the machine's named steps and the effects that perform
 * them (`RunActors`, `ActorDeps`), the real actors, and the few helpers the runtime shares with them
 * (the cap in force, where an item is, the write gates, the errors). The runtime imports actors/
 * through this file only; inside actors/ files import each other directly, and none imports this one.
 */
import { runDrain } from './drain/run.js';
import { runGeoResync } from './geo.js';
import { runPreflight } from './preflight.js';
import { runStorageCheck } from './storages.js';
import type { RunActors } from './types.js';
import { runVerify } from './verify.js';
import { applyWeights, readWeights } from './weights.js';

export type { ActorDeps, RunActors } from './types.js';
export { recordOutageHold, recordRateHold, stopSeen } from './cap.js';
export { savedKnee } from './auto-cap.js';
export { locate } from './drain/locate.js';
export type { Location } from './drain/locate.js';
export { StepError, WEIGHTS_CHANGED, WEIGHTS_MISMATCH } from './errors.js';
export { givenListActors } from './given-list.js';
export type { GivenItem } from './given-list.js';
export { revertActors } from './revert.js';
export { forwardMovedItems, revertDrains } from './revert-items.js';
export type { AliveMove, RevertItem, RevertSeedList, RevertSet, SkippedItem } from './revert-items.js';
export {
  laterWeightChange,
  restoreTarget,
  weightsChangedError,
  weightsLeftBy,
  writeRestoredWeights,
} from './weight-changes.js';
export type { LaterWeight, WeightChange } from './weight-changes.js';

/** The actors that do the work, one per step the machine names. */
export const realActors: RunActors = {
  preflight: runPreflight,
  storages: runStorageCheck,
  readWeights,
  weights: applyWeights,
  drain: runDrain,
  verify: runVerify,
  geo: runGeoResync,
};
