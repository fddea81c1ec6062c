/** How many moves a run's checkpoint has in flight, read as `status` reads it. */
import { existsSync } from 'node:fs';
import { readStatus } from '../../src/runtime/status.js';

/**
 * The moves in flight in the checkpoint at `file`; 0 while it does not exist or is still being
 * created by the run that is starting (a half-made file is no checkpoint yet, and polling goes on).
 */
export function movesInFlight(file: string): number {
  if (!existsSync(file)) return 0;
  try {
    return readStatus(file, Date.now()).kinds.reduce((n, k) => n + k.inFlight, 0);
  } catch {
    return 0;
  }
}
