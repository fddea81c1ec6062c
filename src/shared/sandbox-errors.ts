/**
 * The sandbox's error codes. They stand on the shared floor because two sides need them: the
 * sandbox throws them (seed.ts, faults.ts), and the CLI maps them to exit codes without loading
 * the sandbox, which main.ts loads only for the commands that start it.
 */
import { defineErrorCodes } from './errors.js';

export const SANDBOX_CODES = defineErrorCodes('sandbox', {
  SHARDMOVE_SEED_INVALID:
    'The sandbox seed (or its items file) cannot be used; every problem is named with file:line:col. Nothing was started.',
  SHARDMOVE_SANDBOX_FAULTS_INVALID:
    'A fault option of `shardmove sandbox` is out of range or malformed (a rate, a broken item). Nothing was started.',
});

/** Code of the sandbox's SeedError. */
export const SEED_INVALID = SANDBOX_CODES.SHARDMOVE_SEED_INVALID;
/** Code of the sandbox's FaultOptionsError. */
export const SANDBOX_FAULTS_INVALID = SANDBOX_CODES.SHARDMOVE_SANDBOX_FAULTS_INVALID;
