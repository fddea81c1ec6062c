/**
 * The names of the public events of `run --events`, which a plan names too (`notify.on`). Each is
 * declared with its schema and its words in ../events/run-events.ts, the public contract; the names
 * alone stand here, below both the plan and the events, so that the plan can check what it is given
 * without standing on the schemas and what they import. A name here without its declaration there,
 * or the reverse, fails the build (../events/run-events.ts checks both ways).
 */
export const RUN_EVENT_NAMES = [
  'run.started',
  'step.started',
  'step.ended',
  'move.scheduled',
  'move.finished',
  'move.failed',
  'move.quarantined',
  'cap.changed',
  'run.paused',
  'run.unpaused',
  'breaker.tripped',
  'window.opened',
  'window.closed',
  'progress',
  'network.split',
  'lock.taken_over',
  'lease.lost',
  'run.stopping',
  'run.finished',
] as const;

export type RunEventName = (typeof RUN_EVENT_NAMES)[number];
