/**
 * A stop from outside, as one run meets it (../runtime/control/stop.ts is the watcher): when the run may
 * end, what it says when it sees the request, how it ends on it, and how a run that ended otherwise
 * consumes a request that came as it ended.
 */
import type { Logger } from 'pino';
import { stopSeen } from '../../actors/index.js';
import type { ActorDeps } from '../../actors/index.js';
import type { StopRequest } from '../../events/vocabulary.js';
import { stopAskedBy } from '../../events/hold.js';
import type { MigrationSpan } from '../../report/span.js';
import type { RunContext } from '../../machine/types.js';
import type { Clock } from '../../shared/clock.js';
import type { SecretSet } from '../observe/logger.js';
import { createStopWatch } from './stop.js';
import type { StopWatch } from './stop.js';
import type { RunOptions, RunOutcome } from '../types.js';
import type { ControlStore } from '../../store/views.js';

/** The watcher of a run, which says on standard error when it sees a request. */
export function watchRunForStop(o: {
  store: ControlStore;
  clock: Clock;
  log: Logger;
  opts: Pick<RunOptions, 'signal' | 'stderr'>;
  quiet(): boolean;
  step(): string;
}): StopWatch {
  return createStopWatch({
    store: o.store,
    clock: o.clock,
    log: o.log,
    external: o.opts.signal,
    quiet: o.quiet,
    step: o.step,
    onSeen: (req, inFlight) => o.opts.stderr.write(`note: ${stoppingNote(req, inFlight)}\n`),
  });
}

/**
 * Whether a run asked to stop may end now. Outside a drain nothing of this run is going (moves an
 * earlier process left in flight are followed by the drain that reaches them, as after Ctrl-C).
 * In a drain: no move in flight or being posted, and, where the drain has a bulk job, the drain
 * has seen the stop in its cap: until then it follows the job, which the instance cannot call
 * back, to its end (or holds its POST).
 */
export function quietForStop(store: ControlStore, c: RunContext, deps: ActorDeps): boolean {
  if (c.step !== 'drain') return true;
  if (store.countInFlight() > 0) return false;
  const kind = c.kinds[c.kindIndex];
  const source = c.sources[c.sourceIndex];
  return stopSeen(deps) || !kind || !source || store.getBulk(kind, source) === null;
}

const askedBy = (req: StopRequest) => stopAskedBy(req.by);

/** What the run says when it sees a stop request. */
function stoppingNote(req: StopRequest, inFlight: number): string {
  const then =
    inFlight > 0
      ? `the ${inFlight} move(s) in flight are followed to their end, then the run exits`
      : 'the run exits once nothing is in flight';
  return `stopping, asked by ${askedBy(req)}: nothing new starts; ${then}; \`run\` again continues`;
}

/** The end of a run that obeyed a stop: recorded, the request consumed, the report's data. */
export function stoppedOutcome(a: {
  stop: StopWatch;
  step: string;
  /** Writes the step in flight made before the stop came (effects.ts `lateWrites`), in words. */
  late?: readonly string[];
  elapsedMs: number;
  /** The whole migration's span, this process included (../report/span.ts). */
  span?: MigrationSpan;
  opts: Pick<RunOptions, 'dryRun'>;
  store: ControlStore;
  services: { clock: Clock };
  log: Logger;
  logFile: string;
  secrets: SecretSet;
  leaseLost?: () => boolean;
}): RunOutcome {
  const obeyed = a.stop.obeyed!;
  const now = a.services.clock.now();
  a.store.appendEvent('run.stopped', { by: obeyed.by, step: a.step }, now);
  a.log.warn({ stop: obeyed, step: a.step }, 'checkpoint saved: stopped on request');
  const notes = a.leaseLost?.() ? [] : a.stop.consume();
  return {
    kind: 'stopped',
    report: {
      stop: obeyed,
      inFlight: a.stop.inFlightAtStop,
      stopFile: a.stop.file,
      step: a.step,
      dryRun: a.opts.dryRun,
      summary: a.store.summary(now, true),
      elapsedMs: a.elapsedMs,
      ...(a.span ? { span: a.span } : {}),
      checkpointFile: a.store.file,
      logFile: a.logFile,
      notes,
      ...(a.late && a.late.length > 0 ? { late: [...a.late] } : {}),
    },
    redact: (text) => a.secrets.scrub(text),
  };
}

/** A run that ended otherwise consumes a stop request too (it came as the run ended), and says so. */
export function noteConsumed(stop: StopWatch, opts: Pick<RunOptions, 'stderr'>): void {
  const seen = stop.seen;
  const notes = stop.consume();
  if (seen) opts.stderr.write(`note: the stop asked for by ${askedBy(seen)} was cleared: the run ended first\n`);
  for (const n of notes) opts.stderr.write(`warning: ${n}\n`);
}
