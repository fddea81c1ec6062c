/**
 * The codes the machine records itself, and its one error class. The machine keeps failures as
 * plain data (StepFailure in types.ts), never as instances: the context is persisted.
 */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';

/** The codes the machine records, with their meanings for operators (docs/errors.md). */
export const MACHINE_CODES = defineErrorCodes('machine', {
  SHARDMOVE_INTERNAL:
    'A step threw something without a code, or a step was not wired: a bug in shardmove; please report it with the log file.',
  SHARDMOVE_VERIFY_FAILED:
    'The verify step found items still on a source storage, or other problems; the message lists them.',
});

/** An actor threw something without a code, or was not provided (a bug). */
export const INTERNAL = MACHINE_CODES.SHARDMOVE_INTERNAL;
/** The verify step found items left on a source or other problems. */
export const VERIFY_FAILED = MACHINE_CODES.SHARDMOVE_VERIFY_FAILED;

/** A named actor was not provided to the machine (runtime or test wiring bug). */
export class ActorNotProvidedError extends ShardmoveError<typeof INTERNAL> {
  constructor(readonly actor: string) {
    super(INTERNAL, `actor "${actor}" was not provided`);
  }
}
