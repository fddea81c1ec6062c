/**
 * The move engine: a pool of workers that carries moves through GitLab's states.
 * TODO(#2): implementation.
 */
import type { Logger } from 'pino';
import type { Clock } from './context.js';
import type { Db, ItemKind } from './db.js';
import type { Faults } from './faults.js';
import type { InstanceConfig } from './seed.js';

export interface EngineOptions {
  workers: number;
  speed: number;
  /** Fixed duration of every move in ms; when unset, duration follows repository size. */
  moveDurationMs?: number;
}

export interface MoveEngine {
  /** Starts processing (resumes moves left running by a previous process). */
  start(): void;
  /** Stops timers; state stays in the database. */
  close(): void;
  /** Wakes the engine after new moves were created. */
  kick(): void;
  /** For tests: the item kinds it handles. */
  readonly kinds: readonly ItemKind[];
}

/** Everything the engine needs from the service's state. */
export interface EngineDeps {
  db: Db;
  config: InstanceConfig;
  clock: Clock;
  log: Logger;
  faults: Faults;
}

export function createMoveEngine(deps: EngineDeps, options: EngineOptions): MoveEngine {
  void deps;
  void options;
  return { start() {}, close() {}, kick() {}, kinds: ['project', 'snippet', 'group'] };
}
