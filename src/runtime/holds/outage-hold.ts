/**
 * The run's side of instance outages (api/outage.ts): one gate per run, given to the client, whose
 * changes are recorded (`instance.unreachable`, `instance.answered`, and the hold as a cap of 0 so
 * that the progress line, `status`, the metrics and the hooks show it), logged, and said once on
 * standard error. A quiet run (paused, held, nothing in flight) is watched by a cheap probe, so an
 * outage is said even when no request waits for it.
 */
import { recordOutageHold } from '../../actors/index.js';
import type { ActorDeps } from '../../actors/index.js';
import { DEFAULT_OUTAGE_RETRY_MS, createOutageGate, describeOutage } from '../../api/outage.js';
import type { OutageGate, OutageProbe, OutageState } from '../../api/outage.js';
import { formatPlanDuration } from '../../time/durations.js';
import type { Plan } from '../../plan/types.js';
import type { CheckpointStore } from '../../store/types.js';
import type { Clock } from '../../shared/clock.js';

/** The environment knob that sets how often a held run asks the instance again (tests, rehearsals). */
export const OUTAGE_RETRY_ENV = 'SHARDMOVE_OUTAGE_RETRY_MS';

/** What `createRunOutage` needs of the run. */
export interface RunOutageOptions {
  plan: Plan;
  env: Readonly<Record<string, string | undefined>>;
  /** Where the events go (a command that opens its checkpoint later forwards them once it has). */
  store: Pick<CheckpointStore, 'appendEvent'>;
  clock: Clock;
  /** The run's log (a command that creates its log on its first line gives a pair that does). */
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  stderr: NodeJS.WritableStream;
  signal: AbortSignal;
  /** What the HELD line says goes on meanwhile (default: the run's moves already posted). */
  meanwhile?: string;
}

/** The gate for the client, the drain's deps to record the hold in once they exist, and the end of the watch. */
export interface RunOutage {
  gate: OutageGate;
  /** The drain's deps: from now on the hold is a cap of 0 (actors/cap.ts). */
  attach(deps: ActorDeps): void;
  close(): void;
}

/** How often a held run asks again: SHARDMOVE_OUTAGE_RETRY_MS when it is a whole number of ms (1 or more). */
export function outageRetryMs(env: Readonly<Record<string, string | undefined>>): {
  ms: number;
  warning: string | null;
} {
  const raw = env[OUTAGE_RETRY_ENV];
  if (raw === undefined || raw.trim() === '') return { ms: DEFAULT_OUTAGE_RETRY_MS, warning: null };
  const ms = Number(raw.trim());
  if (Number.isSafeInteger(ms) && ms >= 1) return { ms, warning: null };
  return {
    ms: DEFAULT_OUTAGE_RETRY_MS,
    warning: `${OUTAGE_RETRY_ENV}="${raw}" is not a whole number of milliseconds (1 or more); asking every ${formatPlanDuration(DEFAULT_OUTAGE_RETRY_MS)}`,
  };
}

/** Creates the run's gate and starts watching a quiet run. */
export function createRunOutage(o: RunOutageOptions): RunOutage {
  const { store, clock, log, stderr } = o;
  const retry = outageRetryMs(o.env);
  if (retry.warning) stderr.write(`warning: ${retry.warning}\n`);
  let deps: ActorDeps | null = null;
  let current: OutageState | null = null;
  const waitText = formatPlanDuration(o.plan.instance.outageWaitMs);
  /** A record that fails (a busy or lost checkpoint) must not become the request's error. */
  const safely = (what: string, f: () => void) => {
    try {
      f();
    } catch (err) {
      log.warn({ err }, `could not record ${what}`);
    }
  };
  const hold = () => (current ? { reason: describeOutage(current), since: current.since } : null);
  const gate = createOutageGate({
    waitMs: o.plan.instance.outageWaitMs,
    retryMs: retry.ms,
    clock,
    signal: o.signal,
    listener: {
      down(state) {
        current = state;
        safely('the outage', () => {
          // The hold first: whoever sees the event finds the hold recorded.
          if (deps) recordOutageHold(deps, hold());
          store.appendEvent('instance.unreachable', { ...state }, clock.now());
        });
        log.warn({ since: state.since, cause: state.cause }, 'the instance does not answer: the run holds');
        stderr.write(
          `HELD: ${describeOutage(state)}, for up to ${waitText} (instance.outage_wait); ` +
            `${o.meanwhile ?? 'moves already posted go on on GitLab, and are followed once it answers'}\n`,
        );
      },
      up(state, at) {
        current = null;
        const downMs = Math.max(0, at - state.since);
        safely('the end of the outage', () => {
          store.appendEvent('instance.answered', { since: state.since, downMs }, clock.now());
          if (deps) recordOutageHold(deps, null);
        });
        log.info({ since: state.since, downMs }, 'the instance answers again');
        stderr.write(
          `note: the instance answers again after ${formatPlanDuration(Math.max(1000, Math.round(downMs / 1000) * 1000))}; the run goes on\n`,
        );
      },
    },
  });
  // A run that sends nothing for a while (paused, held, nothing in flight) still asks.
  const watch = gate.watch(retry.ms);
  return {
    gate,
    attach(d) {
      deps = d;
      // An outage already in course (seen before the drain's deps existed) holds from now on too.
      if (current) safely('the outage', () => recordOutageHold(d, hold()));
    },
    close: () => watch.close(),
  };
}

/**
 * One client, two gates in turn: `revert` reads the instance before its run starts (with a gate of
 * its own) and then hands the same client to the run, whose gate records the hold in the revert's
 * checkpoint. The client holds this relay; `use` switches every later call to the run's gate and
 * gives it the client's probe.
 */
export function createRelayGate(first: OutageGate): { gate: OutageGate; use(next: OutageGate): void } {
  let current = first;
  let probe: OutageProbe | null = null;
  const gate: OutageGate = {
    get retryMs() {
      return current.retryMs;
    },
    get waitMs() {
      return current.waitMs;
    },
    failed: (cause, at) => current.failed(cause, at),
    answered: (at) => current.answered(at),
    hold: (cause, signal) => current.hold(cause, signal),
    state: () => current.state(),
    setProbe(p) {
      probe = p;
      current.setProbe(p);
    },
    watch: (quietMs) => current.watch(quietMs),
  };
  return {
    gate,
    use(next) {
      if (next === current) return;
      current = next;
      if (probe) next.setProbe(probe);
    },
  };
}
