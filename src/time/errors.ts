/** The error codes of time/, with their meanings for operators (docs/errors.md). */
import { defineErrorCodes } from '../shared/errors.js';

export const TIME_CODES = defineErrorCodes('time', {
  SHARDMOVE_WINDOW_SYNTAX:
    'A maintenance window does not parse; the plan loader reports it as a plan problem (SHARDMOVE_PLAN_INVALID) with its file:line:col and how to write one.',
});

/** Code of WindowSyntaxError (windows.ts). */
export const WINDOW_SYNTAX = TIME_CODES.SHARDMOVE_WINDOW_SYNTAX;
