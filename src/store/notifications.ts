/**
 * The notifications of the plan's `notify:` (schema 20): each public event a target asked for,
 * recorded once with its own number, and one delivery row per target until that target took it.
 * The cursor says up to which audit event the log was turned into notifications. A read-only open
 * of a checkpoint older than schema 20 has none of these tables: it knows no notification.
 */
import type Database from 'better-sqlite3';
import type { NotifyEntry, NotifyStore, NotifyTargetView, PendingNotification } from './types.js';
import { LaterTable } from './introspect.js';

interface HeadRow {
  seq: number;
  type: string;
  at: number;
  body: string;
  attempts: number;
  next_attempt_at: number | null;
  last_error: string | null;
}

/** The table's statements, prepared as placeholders on a file without it. */
function notifyStatements(w: (sql: string) => Database.Statement) {
  return {
    cursor: w('SELECT audit_seq FROM notify_cursor WHERE id = 1'),
    putCursor: w(
      'INSERT INTO notify_cursor (id, audit_seq) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET audit_seq = excluded.audit_seq',
    ),
    event: w('INSERT INTO notify_events (audit_seq, at, type, body) VALUES (?, ?, ?, ?) RETURNING seq'),
    delivery: w(
      'INSERT OR IGNORE INTO notify_deliveries (target, event_seq, label, next_attempt_at) VALUES (?, ?, ?, ?)',
    ),
    head: w(
      `SELECT e.seq, e.type, e.at, e.body, d.attempts, d.next_attempt_at, d.last_error
       FROM notify_deliveries d INDEXED BY notify_undelivered JOIN notify_events e ON e.seq = d.event_seq
       WHERE d.target = ? AND d.delivered_at IS NULL AND d.next_attempt_at IS NOT NULL
       ORDER BY d.event_seq LIMIT 1`,
    ),
    attempted: w(
      'UPDATE notify_deliveries SET attempts = attempts + 1 WHERE target = ? AND event_seq = ? RETURNING attempts',
    ),
    delivered: w(
      'UPDATE notify_deliveries SET delivered_at = ?, next_attempt_at = NULL, last_error = NULL WHERE target = ? AND event_seq = ?',
    ),
    failed: w('UPDATE notify_deliveries SET last_error = ?, next_attempt_at = ? WHERE target = ? AND event_seq = ?'),
    retryAll: w('UPDATE notify_deliveries SET next_attempt_at = ? WHERE delivered_at IS NULL'),
    waiting: w(
      `SELECT target, label, COUNT(*) AS waiting, SUM(next_attempt_at IS NULL) AS given_up, MIN(event_seq) AS oldest
       FROM notify_deliveries INDEXED BY notify_undelivered WHERE delivered_at IS NULL GROUP BY target ORDER BY target`,
    ),
    lastSeq: w('SELECT COALESCE(MAX(seq), 0) AS seq FROM notify_events'),
    oldest: w(
      `SELECT e.seq, e.type, e.at, d.attempts, d.next_attempt_at, d.last_error
       FROM notify_deliveries d JOIN notify_events e ON e.seq = d.event_seq WHERE d.target = ? AND d.event_seq = ?`,
    ),
  };
}

/** SQLite-backed NotifyStore over an open checkpoint database. */
export class NotificationTable extends LaterTable implements NotifyStore {
  private readonly s = notifyStatements(this.prepare);

  constructor(db: Database.Database) {
    super(db, 'notify_deliveries');
  }

  cursor(): number | null {
    const r = this.s.cursor.get() as { audit_seq: number } | undefined;
    return r ? r.audit_seq : null;
  }

  enqueue(entries: readonly NotifyEntry[], cursor: number | null): void {
    this.db
      .transaction(() => {
        for (const e of entries) {
          if (e.targets.length === 0) continue;
          const { seq } = this.s.event.get(e.auditSeq, e.at, e.type, JSON.stringify(e.body)) as { seq: number };
          for (const t of e.targets) this.s.delivery.run(t.key, seq, t.label, e.at);
        }
        if (cursor !== null) this.s.putCursor.run(cursor);
      })
      .immediate();
  }

  head(target: string): PendingNotification | null {
    const r = this.s.head.get(target) as HeadRow | undefined;
    if (!r) return null;
    return {
      seq: r.seq,
      type: r.type,
      at: r.at,
      body: JSON.parse(r.body) as object,
      attempts: r.attempts,
      nextAttemptAt: r.next_attempt_at,
      lastError: r.last_error,
    };
  }

  attempted(target: string, seq: number): number {
    const r = this.s.attempted.get(target, seq) as { attempts: number } | undefined;
    return r?.attempts ?? 0;
  }

  delivered(target: string, seq: number, at: number): void {
    this.s.delivered.run(at, target, seq);
  }

  failed(target: string, seq: number, error: string, nextAttemptAt: number | null): void {
    this.s.failed.run(error, nextAttemptAt, target, seq);
  }

  retryAll(now: number): void {
    this.s.retryAll.run(now);
  }

  lastSeq(): number {
    return (this.s.lastSeq.get() as { seq: number } | undefined)?.seq ?? 0;
  }

  waiting(): NotifyTargetView[] {
    if (!this.known) return [];
    const rows = this.s.waiting.all() as {
      target: string;
      label: string;
      waiting: number;
      given_up: number;
      oldest: number;
    }[];
    return rows.map((r) => {
      const o = this.s.oldest.get(r.target, r.oldest) as Omit<HeadRow, 'body'>;
      return {
        target: r.target,
        label: r.label,
        waiting: r.waiting,
        givenUp: r.given_up,
        oldest: {
          seq: o.seq,
          type: o.type,
          at: o.at,
          attempts: o.attempts,
          nextAttemptAt: o.next_attempt_at,
          lastError: o.last_error,
        },
      };
    });
  }
}
