/** Errors of `--metrics-file`, with their stable codes. */
import { ShardmoveError, defineErrorCodes } from '../shared/errors.js';

/** The metrics file's error codes, with their meanings for operators (docs/errors.md). */
export const METRICS_CODES = defineErrorCodes('metrics', {
  SHARDMOVE_METRICS_FILE_IN_USE:
    "`--metrics-file`: another live run keeps that file (its plan, plan file, checkpoint, pid and host are named, from the owner record `.<file>.owner` beside it); two runs writing one file would replace each other's metrics at every poll. Nothing was written. Give this run another file, or wait for the other run; an owner record whose process is gone on this host is taken over by itself.",
});

export const METRICS_FILE_IN_USE = METRICS_CODES.SHARDMOVE_METRICS_FILE_IN_USE;

/** Another live run keeps the metrics file (exit 4). */
export class MetricsFileInUseError extends ShardmoveError<typeof METRICS_FILE_IN_USE> {
  constructor(message: string) {
    super(METRICS_FILE_IN_USE, message);
  }
}
