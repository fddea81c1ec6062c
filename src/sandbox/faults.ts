/**
 * Fault injection for rehearsals and robustness tests, deterministic under a seed.
 * TODO(#2): request faults (latency, 503, resets, rate limit) and move fates.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface FaultOptions {
  latencyMs: number;
  errorRate: number;
  resetRate: number;
  /** Requests per minute before 429; undefined means no limit. */
  rateLimit?: number;
  moveFailRate: number;
  /** `project:12`, `snippet:3`, `group:7` (plural kinds accepted too). */
  brokenItems: string[];
  stuckRate: number;
  seed: number;
}

export const NO_FAULTS: FaultOptions = { latencyMs: 0, errorRate: 0, resetRate: 0, moveFailRate: 0, brokenItems: [], stuckRate: 0, seed: 1 };

/** How a move will end, decided when it is created. */
export type MoveFate = 'ok' | 'fail' | 'cleanup_fail' | 'stuck';

export interface Faults {
  /** Runs before routing; returns true when it already answered (or destroyed) the request. */
  onRequest(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  moveFate(kind: string, itemId: number): MoveFate;
  /** Counters of injected faults by kind. */
  counts(): Record<string, number>;
}

export function createFaults(options: FaultOptions): Faults {
  void options;
  return {
    onRequest: async () => false,
    moveFate: () => 'ok',
    counts: () => ({}),
  };
}
