/** What the delivery worker hands a sender (a webhook, a command), and what a sender is. */
import type { RunEvent } from '../events/run-events.js';
import type { DeliveryResult } from './policy.js';
import type { Target } from './targets.js';

/** One attempt at one delivery. */
export interface Delivery {
  target: Target;
  /** The event as `--events` writes it, `seq` being the notification's own number. */
  event: RunEvent;
  /** The event in one line for people (`shardmove <plan>: ...`). */
  line: string;
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
