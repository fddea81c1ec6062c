/**
 * The codes the machine records itself, and its one error class. The machine keeps failures as
 * plain data (StepFailure in types.ts), never as instances: the context is persisted.
 */
import { ShardmoveError } from '../shared/errors.js';

/** An actor threw something without a code, or was not provided (a bug). */
export const INTERNAL = 'SHARDMOVE_INTERNAL';
/** The verify step found items left on a source or other problems. */
export const VERIFY_FAILED = 'SHARDMOVE_VERIFY_FAILED';

/** A named actor was not provided to the machine (runtime or test wiring bug). */
export class ActorNotProvidedError extends ShardmoveError<typeof INTERNAL> {
  constructor(readonly actor: string) {
    super(INTERNAL, `actor "${actor}" was not provided`);
  }
}
