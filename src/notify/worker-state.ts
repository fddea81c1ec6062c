/**
 * The delivery worker's state, which its two halves share: the deliveries while the run goes
 * (./delivery.ts) and the end's pass (./end-pass.ts). Also the guarded reads and writes of the
 * checkpoint, the senders made on first use, and which run the notifications are about.
 */
import { dirname, resolve } from 'node:path';
import type { SinkState } from '../events/run-events-of-audit.js';
import type { RunEventBody } from '../events/run-events.js';
import type { ObservedRun } from '../runtime/observe/observer.js';
import { scrubServerText } from '../secrets/registry.js';
import { isLeaseLostError } from '../store/lease.js';
import type { NotifyEntry, NotifyStore } from '../store/types.js';
import { createExecSender } from './exec.js';
import type { Target } from './targets.js';
import type { NotifiedRun, NotifierOptions, NotifyLeft, Sender } from './types.js';
import { createWebhookSender } from './webhook.js';

/** Everything one notifier knows and changes; one object per run. */
export interface WorkerState {
  readonly opts: NotifierOptions;
  run: ObservedRun | null;
  store: NotifyStore | null;
  targets: Target[];
  sink: SinkState | null;
  cursor: number;
  /** Set when the checkpoint refused a write (the lease was lost): nothing more is written or sent. */
  broken: boolean;
  /** The end's pass has begun: every waiting notification gets its attempt now. */
  final: boolean;
  /** The end's wait is over: nothing new starts. */
  closing: boolean;
  /** The events that tell how the run ended, heard before it stopped. */
  last: RunEventBody[];
  left: NotifyLeft | null;
  /** The attempt in flight per target key. */
  readonly busy: Map<string, AbortController>;
  /** Targets already warned about: one warning each. */
  readonly warned: Set<string>;
  /** Targets the end's pass stopped for: one failure each, then the rest waits for the next run. */
  readonly doneAtEnd: Set<string>;
  /** Called when the last attempt in flight settles, while the end waits for that. */
  onIdle: (() => void) | null;
  /** The real senders, made on first use. */
  readonly senders: Record<'webhook' | 'exec', Sender | null>;
  about: NotifiedRun | null;
}

/** A fresh state: no run heard yet. */
export function createWorkerState(opts: NotifierOptions): WorkerState {
  return {
    opts,
    run: null,
    store: null,
    targets: [],
    sink: null,
    cursor: 0,
    broken: false,
    final: false,
    closing: false,
    last: [],
    left: null,
    busy: new Map(),
    warned: new Set(),
    doneAtEnd: new Set(),
    onIdle: null,
    senders: { webhook: null, exec: null },
    about: null,
  };
}

/**
 * The instance's URL as a notification names it: its origin and path (an instance may live under
 * a path), never a query or user:password@, scrubbed of every secret the run knows.
 */
function shownInstance(url: string): string {
  try {
    const u = new URL(url);
    return scrubServerText(`${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`);
  } catch {
    return '';
  }
}

/** The sender of a kind of target: the test's, else the real one, made once. */
export function senderOf(s: WorkerState, kind: 'webhook' | 'exec'): Sender {
  const given = s.opts.senders?.[kind];
  if (given) return given;
  s.senders[kind] ??=
    kind === 'webhook'
      ? createWebhookSender()
      : createExecSender({ cwd: dirname(resolve(s.opts.cwd, s.opts.planFile)), env: s.opts.env });
  return s.senders[kind]!;
}

/** Which run the notifications are about: the same in every body, standard input and variable. */
export function notifiedRun(s: WorkerState): NotifiedRun {
  const run = s.run!;
  return (s.about ??= {
    plan: run.plan.name,
    planFile: resolve(s.opts.cwd, s.opts.planFile),
    instance: shownInstance(run.plan.instance.url),
    host: run.host,
    checkpoint: resolve(s.opts.cwd, run.checkpoint),
  });
}

/**
 * Runs a write. One the fence refuses (the lease is lost) stops the worker, never the run; any
 * other failure (a checkpoint busy for long) leaves things as they were, for the next tick.
 */
export function guardedWrite(s: WorkerState, fn: () => void): boolean {
  if (s.broken) return false;
  try {
    fn();
    return true;
  } catch (err) {
    if (isLeaseLostError(err)) s.broken = true;
    return false;
  }
}

/** A read; one that fails (a busy checkpoint) is tried again at the next tick. */
export function guardedRead<T>(fn: () => T): T | null {
  try {
    return fn();
  } catch {
    return null;
  }
}

/** A notification of an event, for every target that asked for its type. */
export function entryOf(s: WorkerState, auditSeq: number | null, at: number, body: RunEventBody): NotifyEntry {
  return {
    auditSeq,
    at,
    type: body.type,
    body,
    targets: s.targets.filter((t) => t.wants(body.type)).map((t) => ({ key: t.key, label: t.label })),
  };
}
