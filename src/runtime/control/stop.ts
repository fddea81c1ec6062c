/**
 * A stop from outside, the way gh-ost's panic-flag file and MoveTables' `cancel` stop a change: no
 * new move starts, the moves in flight are followed to their end, and the run exits with its own
 * exit code; the same `run` resumes it later. Two ways to ask: `shardmove control PLAN --stop`
 * writes a stop request into the checkpoint's control row, and the stop file (`<checkpoint>.stop`,
 * anything at that path: a file, an empty one, a directory, a symlink, never opened or followed)
 * asks the same where only a file can be dropped; the watcher writes that request into the row.
 *
 * The watcher looks every second and whenever the run reports progress. The first time it sees a
 * request it records `run.stopping`; from then on the cap in force is 0 (actors/cap.ts) and every
 * write waits (actors/write-gate.ts). Once nothing the run started is still going, it aborts its
 * signal, as Ctrl-C does: the step in flight returns and the checkpoint is saved. The run that ends
 * (stopped, finished, failed or interrupted, but not one that lost its lock) consumes the request:
 * it clears the row and removes the stop file it saw, so that `run` again goes on.
 */
import { lstatSync, rmdirSync, unlinkSync } from 'node:fs';
import type { Stats } from 'node:fs';
import type { Logger } from 'pino';
import type { StopRequest } from '../../events/vocabulary.js';
import type { Clock, Timer } from '../../shared/clock.js';
import type { ControlStore } from '../../store/views.js';

/** How often the watcher looks for a stop request when nothing told it to. */
export const STOP_CHECK_MS = 1_000;
/** At a turn of the drain, the stop file is looked at again only this long after the last look. */
const FILE_LOOK_MS = 200;

/** The stop file of a checkpoint: beside it, its name and `.stop`. */
export function stopFilePath(checkpoint: string): string {
  return `${checkpoint}.stop`;
}

export interface StopWatchOptions {
  store: ControlStore;
  clock: Clock;
  log: Pick<Logger, 'info' | 'warn'>;
  /** The run's other ends (Ctrl-C, a lost lease): once it aborted, the watcher never ends the run. */
  external: AbortSignal;
  /** Whether the run may end now: nothing it follows (a move in flight, a bulk job) is still going. */
  quiet(): boolean;
  /** The step the run is in, e.g. "drain nfs-1/projects". */
  step(): string;
  /** Told once, when a request is first seen. */
  onSeen?(stop: StopRequest, inFlight: number): void;
}

/** The watcher of one run. */
export interface StopWatch {
  /** Aborted when the run obeys a stop request (nothing was going on any more). */
  readonly signal: AbortSignal;
  /** The request this run saw, or null. */
  readonly seen: StopRequest | null;
  /** The moves in flight when it first saw it (0 before). */
  readonly inFlightAtStop: number;
  /** The request this run obeyed (its signal aborted for it), or null. */
  readonly obeyed: StopRequest | null;
  /** The stop file's path. */
  readonly file: string;
  /** Looks now (at start, and whenever the run reports progress). */
  check(): void;
  /**
   * Looks now, at the stop file too however recently it was looked at, and tells whether a request
   * was seen: asked right before a write to the instance, which a stop asked for must keep unsent.
   */
  asked(): boolean;
  /** Starts looking every STOP_CHECK_MS. */
  start(): void;
  /** Stops looking. */
  close(): void;
  /**
   * At the run's end: clears a stop request left in the row and removes the stop file this run saw.
   * Returns what to tell the operator (a stop file that could not be removed). Never throws: a write
   * refused because the lock was lost leaves both for the run that now holds the lock.
   */
  consume(): string[];
}

/** Creates the watcher; `start()` it once the run's machine exists (`quiet` and `step` read it). */
export function createStopWatch(o: StopWatchOptions): StopWatch {
  const controller = new AbortController();
  const file = stopFilePath(o.store.file);
  let seen: StopRequest | null = null;
  let inFlightAtStop = 0;
  let obeyed: StopRequest | null = null;
  /** The stop file as this run first saw it (removed at the end only if it is still that one). */
  let fileSeen: Stats | null = null;
  let timer: Timer | null = null;
  let failing = false;

  const lookAtFile = (): void => {
    const st = lstatOrNull(file, o.log);
    if (!st) return;
    fileSeen ??= st;
    if (o.store.readControl().stop) return;
    o.store.writeControl({ stop: { by: 'file' } }, o.clock.now());
    o.log.info({ file, type: fileType(st) }, 'stop file found');
  };

  // The file is looked at by the timer, and at a turn of the drain only when the last look is a
  // while ago: an lstat after every POST batch and poll was 3% of a drain's CPU.
  let lastLook = -Infinity;
  const check = (fromTimer = false): void => {
    if (obeyed || o.external.aborted) return;
    try {
      const t = performance.now();
      if (fromTimer || t - lastLook >= FILE_LOOK_MS) {
        lastLook = t;
        lookAtFile();
      }
      const stop = o.store.readControl().stop ?? null;
      if (!stop) return;
      if (!seen) {
        seen = stop;
        const inFlight = o.store.countInFlight();
        inFlightAtStop = inFlight;
        o.store.appendEvent('run.stopping', { by: stop.by, step: o.step(), inFlight }, o.clock.now());
        o.log.warn({ stop, inFlight }, 'stop requested: nothing new starts; the run ends once nothing is in flight');
        o.onSeen?.(stop, inFlight);
      }
      failing = false;
      if (!o.quiet()) return;
      obeyed = seen;
      o.log.warn({ stop: seen, step: o.step() }, 'stopping on request: nothing is in flight');
      controller.abort(new Error('stopped on request'));
    } catch (err) {
      // A busy or fenced checkpoint: looked at again next time (a lost lease ends the run by itself).
      if (!failing) o.log.warn({ err }, 'could not look for a stop request');
      failing = true;
    }
  };

  return {
    signal: controller.signal,
    get seen() {
      return seen;
    },
    get obeyed() {
      return obeyed;
    },
    get inFlightAtStop() {
      return inFlightAtStop;
    },
    file,
    check: () => check(),
    asked() {
      check(true);
      return seen !== null;
    },
    start() {
      check(true);
      timer ??= o.clock.setInterval(() => check(true), STOP_CHECK_MS);
      timer.unref();
    },
    close() {
      o.clock.clearInterval(timer);
      timer = null;
    },
    consume() {
      const notes: string[] = [];
      try {
        if (o.store.readControl().stop) o.store.writeControl({ stop: null }, o.clock.now());
      } catch (err) {
        o.log.warn({ err }, 'could not clear the stop request (the lock was lost?): left for the run holding it');
        return notes;
      }
      if (fileSeen) {
        const note = removeStopFile(file, fileSeen);
        if (note) {
          o.log.warn({ file }, note);
          notes.push(note);
        } else o.log.info({ file }, 'stop file removed');
      }
      return notes;
    },
  };
}

/** The entry at `path` (not followed), or null when there is none or it cannot be looked at. */
function lstatOrNull(path: string, log: Pick<Logger, 'warn'>): Stats | null {
  try {
    return lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') log.warn({ err, file: path }, 'could not look for the stop file');
    return null;
  }
}

function fileType(st: Stats): string {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'directory';
  if (st.isFile()) return 'file';
  return 'other';
}

/**
 * Removes the stop file the run obeyed: a file, a symlink (the link, never what it points to) or
 * anything else with unlink, a directory with rmdir (only an empty one: nothing the operator put in
 * it is deleted). One put there since (another entry at the path) is left. Returns what is left to
 * do when it could not be removed, or null.
 */
export function removeStopFile(path: string, seen: Pick<Stats, 'dev' | 'ino'>): string | null {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    return null;
  }
  if (st.dev !== seen.dev || st.ino !== seen.ino)
    return `a new stop file was put at ${path} after this run saw its own: left there, so the next run stops at once; remove it to go on`;
  try {
    if (st.isDirectory()) rmdirSync(path);
    else unlinkSync(path);
    return null;
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return `could not remove the stop file ${path} (${why}): remove it yourself; while it is there, every run stops at once`;
  }
}
