/**
 * How long the whole migration took, from the checkpoint's event log: every process that ran it
 * (each `run.started`) from the first start to the last event, its wall time, and its active time
 * beside it (the sum of each process's own span: from its start to how it ended, or, killed
 * without an end event, to its last event). A resume that finds the run already ended adds a
 * process of a moment, never a new start: the report, the summary's `took`, the metrics and the
 * resume line all count from the first start.
 */
import type { AuditEvent } from '../events/vocabulary.js';

export interface MigrationSpan {
  /** The first process's start (ms since epoch); null when no process started yet. */
  startedAt: number | null;
  /** The last event (ms since epoch), or `now` for a process still running. */
  endedAt: number | null;
  /** From the first start to the end. */
  wallMs: number;
  /** Summed over the processes: the time some process was running the plan. */
  activeMs: number;
  /** How many processes ran it. */
  processes: number;
}

const ENDS = new Set(['run.finished', 'run.interrupted', 'run.stopped']);

/** Folds the log (in order) into the migration's span; `runningSince` is a live process's start, its span reaching `now`. */
export function migrationSpan(
  events: Iterable<Pick<AuditEvent, 'at' | 'type'>>,
  now: number,
  runningSince: number | null = null,
): MigrationSpan {
  let startedAt: number | null = null;
  let last: number | null = null;
  let open: number | null = null;
  let activeMs = 0;
  let processes = 0;
  for (const e of events) {
    if (e.type === 'run.started') {
      // A process killed without an end event ran until its last event.
      if (open !== null && last !== null) activeMs += Math.max(0, last - open);
      open = e.at;
      processes++;
      startedAt ??= e.at;
    } else if (ENDS.has(e.type) && open !== null) {
      activeMs += Math.max(0, e.at - open);
      open = null;
    }
    last = Math.max(last ?? e.at, e.at);
  }
  if (open !== null) {
    const until = runningSince !== null ? Math.max(now, last ?? now) : (last ?? open);
    activeMs += Math.max(0, until - open);
  }
  const endedAt = runningSince !== null ? Math.max(now, last ?? now) : last;
  return {
    startedAt,
    endedAt,
    wallMs: startedAt !== null && endedAt !== null ? Math.max(0, endedAt - startedAt) : 0,
    activeMs,
    processes,
  };
}

/** The span of the migration before a process that starts now, extended to `now` by that process. */
export function withThisProcess(before: MigrationSpan, processStart: number, now: number): MigrationSpan {
  const startedAt = before.startedAt ?? processStart;
  return {
    startedAt,
    endedAt: now,
    wallMs: Math.max(0, now - startedAt),
    activeMs: before.activeMs + Math.max(0, now - processStart),
    processes: before.processes + 1,
  };
}

/** The log in pages, for a checkpoint whose log is too long to read in one array. */
export function* eventsInPages(read: (afterSeq: number, limit: number) => AuditEvent[]): Generator<AuditEvent> {
  let after = 0;
  for (;;) {
    const page = read(after, 10_000);
    if (page.length === 0) return;
    yield* page;
    after = page[page.length - 1]!.seq;
  }
}
