/** An audit event of the vocabulary, built for a test (the log's own events come from the store). */
import type { AuditEvent, AuditEventMap, AuditType } from '../../src/events/vocabulary.js';

let seq = 0;

/** `type` with its data checked against the vocabulary, at `at` (ms), with the next sequence number. */
export function auditEvent<K extends AuditType>(at: number, type: K, data: AuditEventMap[K]): AuditEvent {
  // A generic key and its data make one member of the union; TypeScript cannot correlate them.
  return { seq: ++seq, at, type, data } as AuditEvent;
}
