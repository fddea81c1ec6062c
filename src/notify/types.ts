/**
 * What the delivery worker hands a sender (a webhook, a command), and what a sender is; what the
 * worker is given and what it leaves.
 */
import type { RunEvent, RunEventBody } from '../events/run-events.js';
import type { RunEnd } from '../runtime/types.js';
import type { NotifyTargetView } from '../store/types.js';
import type { DeliveryResult } from './policy.js';
import type { Target } from './targets.js';

/**
 * Which run a notification is about, so a receiver that serves several runs can tell them apart:
 * the `run` object of every JSON body and standard input, and `SHARDMOVE_*` variables.
 */
export interface NotifiedRun {
  /** The plan's `name`. */
  plan: string;
  /** The plan file, absolute. */
  planFile: string;
  /** The instance's URL, without credentials or query. */
  instance: string;
  /** The host the run runs on. */
  host: string;
  /** The checkpoint, absolute. */
  checkpoint: string;
}

/** One attempt at one delivery. */
export interface Delivery {
  target: Target;
  /** The event as `--events` writes it, `seq` being the notification's own number. */
  event: RunEvent;
  /** The event in one line for people (`shardmove <plan> on <host>: ...`). */
  line: string;
  /** The run it is about. */
  run: NotifiedRun;
  /** 1 for the first attempt. */
  attempt: number;
  /** Aborted when the run's end stops waiting: the attempt ends at once (a command is killed). */
  signal: AbortSignal;
}

/** Makes one attempt; never throws (what went wrong is the result's `error`). */
export type Send = (d: Delivery) => Promise<DeliveryResult>;

/** A kind of target's sender, with what it holds open until the run ends. */
export interface Sender {
  send: Send;
  close(): Promise<void>;
}

/** What `createNotifier` is given. */
export interface NotifierOptions {
  /** The plan file, as given: commands run in its directory and see its path. */
  planFile: string;
  cwd: string;
  /** shardmove's environment, which commands inherit (less the run's secrets). */
  env: Readonly<Record<string, string | undefined>>;
  /** The events that tell how a run ended (the CLI's words: `run.finished` with the exit code, after a lost lease `lease.lost` first). */
  lastEvents(end: RunEnd): RunEventBody[];
  /** Told once per target when its deliveries start failing, and at the start about a command that cannot run. */
  onWarning(message: string): void;
  /** Told at the start of a dry run of a plan with targets: it sends nothing. */
  onNote(message: string): void;
  /** Tests: senders instead of the real ones, and the end's wait. */
  senders?: Partial<Record<'webhook' | 'exec', Sender>>;
  finalWaitMs?: number;
}

/** What a run's end left undelivered, for the CLI to say. */
export interface NotifyLeft {
  /** Per target; `inPlan` false: a target the plan no longer lists (its deliveries wait until it does again). */
  waiting: (NotifyTargetView & { inPlan: boolean })[];
  /** True when the checkpoint could not record them (a lost lease): they were sent once, unrecorded. */
  unrecorded: boolean;
}
