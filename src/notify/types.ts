/** What the delivery worker hands a sender (a webhook, a command), and what a sender is. */
import type { RunEvent } from '../events/run-events.js';
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
