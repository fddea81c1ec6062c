/**
 * The one seam through which things outside the run watch it (`--events`, the metrics file, the
 * progress line of every command that drives a drain): they are
 * told when the run starts, when item-level progress changed (after every poll, scheduling batch and
 * listing page), about every HTTP response, and when the run stops. Observers read; they never steer,
 * and what they throw is logged and dropped, so a full disk under a metrics file cannot fail a
 * migration. They derive what they show from the checkpoint (summary and event log), not from calls
 * inside the actors.
 */
import type { MigrationSpan } from '../../report/span.js';
import type { StaysOutput } from '../../machine/types.js';
import type { Logger } from 'pino';
import type { RequestEvent } from '../../api/client.js';
import type { Plan } from '../../plan/types.js';
import type { PaceMeter } from '../../report/pace.js';
import type { NotifyStore } from '../../store/types.js';
import type { Clock } from '../../shared/clock.js';
import type { RunNamed } from '../../shared/control-command.js';
import type { ObserverStore } from '../../store/views.js';

/** What an observer may look at while the run goes on. */
export interface ObservedRun {
  plan: Plan;
  /** The checkpoint's path, and the host this process runs on. */
  checkpoint: string;
  host: string;
  /** The log's last sequence number before this process took the lock: its own events come after. */
  fromSeq: number;
  /** The run's own checkpoint connection: read it (summary, events); never write. */
  store: ObserverStore;
  /**
   * The checkpoint's notifications (the plan's `notify:`), on the same connection: the one part an
   * observer writes, and only their delivery worker does.
   */
  notifications?: NotifyStore;
  clock: Clock;
  /** When this process started driving the run (ms since epoch). */
  startedAt: number;
  /**
   * The whole migration before this process (../report/span.ts): its first start and the active
   * time of the processes before this one; absent where a caller does not know it.
   */
  before?: MigrationSpan;
  /** The run's pace (this process's rate and the ETA), one meter for every observer: they show the same. */
  pace: PaceMeter;
  dryRun: boolean;
  /** The step the run is in, e.g. "drain nfs-1/projects". */
  step(): string;
  /** The instance's GitLab version as pre-flight read it, null before pre-flight (classes failures). */
  instanceVersion?(): string | null;
  /** What verification found still on the sources (each item with why it stays), null before it ran. */
  stays?(): StaysOutput | null;
  /** How the plan and the checkpoint were named on the command line: the commands a hold's next step prints. */
  named?: RunNamed;
  /** Aborted when the run was told to stop (SIGINT, SIGTERM, a lost lease): it ends at the step in flight. */
  signal?: AbortSignal;
}

/** Every hook is optional; each is called synchronously and must be cheap (or throttle itself). */
export interface RunObserver {
  /** The checkpoint is open and locked, the machine about to start. */
  started?(run: ObservedRun): void;
  /** Item-level progress changed: a poll, a scheduling batch or a listing page was recorded. */
  progress?(): void;
  /** One HTTP attempt was answered (or failed without an answer: `status` null). */
  response?(e: RequestEvent): void;
  /** The run stopped (final or interrupted), before the checkpoint is closed. May finish async work. */
  stopped?(): Promise<void> | void;
}

/** Calls `hook` on every observer, logging and swallowing what they throw. */
export function notifyObservers<K extends keyof RunObserver>(
  observers: readonly RunObserver[],
  log: Pick<Logger, 'warn'>,
  hook: K,
  ...args: Parameters<NonNullable<RunObserver[K]>>
): void {
  for (const o of observers) {
    try {
      const r = (o[hook] as ((...a: unknown[]) => unknown) | undefined)?.(...args);
      if (r instanceof Promise) r.catch((err: unknown) => log.warn({ err, hook }, 'run observer failed'));
    } catch (err) {
      log.warn({ err, hook }, 'run observer failed');
    }
  }
}

/** Awaits every observer's `stopped`, logging and swallowing failures. */
export async function stopObservers(observers: readonly RunObserver[], log: Pick<Logger, 'warn'>): Promise<void> {
  for (const o of observers) {
    try {
      await o.stopped?.();
    } catch (err) {
      log.warn({ err, hook: 'stopped' }, 'run observer failed');
    }
  }
}
