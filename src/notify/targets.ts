/**
 * The plan's `notify:` targets as the delivery worker keeps them: a stable key (the deliveries of
 * the checkpoint are kept under it, so a resumed run finds what a target still waits for even when
 * the plan lists it elsewhere) and a label for people. A label shows a webhook's origin only, never
 * its path or query, which may be its key (Slack's incoming webhooks).
 */
import { createHash } from 'node:crypto';
import type { NotifyEventName, NotifyTarget } from '../plan/notify-field.js';

/** One target of the plan, ready for the worker. */
export interface Target {
  /** `webhook <origin> <digest>` or `exec <digest>`: what deliveries are kept under. */
  key: string;
  /** `webhook https://hooks.slack.com`, `exec /usr/local/bin/page-oncall`. */
  label: string;
  plan: NotifyTarget;
  wants(type: string): boolean;
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

/** The worker's targets, in the plan's order. */
export function targetsOf(notify: readonly NotifyTarget[]): Target[] {
  return notify.map((plan) => {
    const on = new Set<string>(plan.on);
    const wants = (type: string) => on.has(type as NotifyEventName);
    if (plan.kind === 'webhook') {
      const origin = new URL(plan.url).origin;
      return { key: `webhook ${origin} ${digest(plan.url)}`, label: `webhook ${origin}`, plan, wants };
    }
    return { key: `exec ${digest(JSON.stringify(plan.argv))}`, label: `exec ${plan.argv[0]}`, plan, wants };
  });
}
