/**
 * The audit trail of HTTP requests, written in batches: at thousands of POSTs a second, a commit
 * per request's audit line cost more CPU than the moves' own bookkeeping. A kill loses at most the
 * last AUDIT_FLUSH_MS of these lines; the move intents and outcomes are committed by the drain itself.
 */
import type { AuditEventMap } from '../../events/vocabulary.js';
import type { Clock } from '../../shared/clock.js';
import type { CheckpointStore } from '../../store/types.js';

type MutatingRequest = AuditEventMap['http.mutating'];

/** How long audit lines may wait to be written together. */
const AUDIT_FLUSH_MS = 100;

/** `http.mutating` events queued for the checkpoint's log; `flush` writes the queue now (the run's end calls it). */
export interface AuditBuffer {
  add(request: MutatingRequest, at: number): void;
  flush(): void;
}

/**
 * Buffers events for `store`, one transaction per AUDIT_FLUSH_MS of `clock`. A write that fails in the timer
 * (the run lock was taken over and the fence refuses it, a busy disk) goes to `onError` and its lines
 * are dropped: thrown from a timer it would crash the process before the run could report why.
 * An explicit `flush` still throws, for the caller to decide.
 */
export function createAuditBuffer(
  store: Pick<CheckpointStore, 'appendEvent' | 'batch'>,
  clock: Pick<Clock, 'setTimeout'>,
  onError: (err: unknown) => void = () => undefined,
): AuditBuffer {
  const queue: { request: MutatingRequest; at: number }[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (queue.length === 0) return;
    const events = queue.splice(0);
    store.batch(() => {
      for (const e of events) store.appendEvent('http.mutating', e.request, e.at);
    });
  };
  return {
    add(request, at) {
      queue.push({ request, at });
      if (!scheduled) {
        scheduled = true;
        // Unref'd: the run's end flushes explicitly, the timer must not keep the process alive.
        clock
          .setTimeout(() => {
            try {
              flush();
            } catch (err) {
              onError(err);
            }
          }, AUDIT_FLUSH_MS)
          .unref();
      }
    },
    flush,
  };
}
