/**
 * The thresholds an operator changed live (`shardmove control --breaker`, `--rule NAME --above X`,
 * `--latency-p90 D`), as gh-ost's interactive commands change `max-load` or `max-lag-millis` under
 * a running migration (schema 21). One row per threshold, kept apart from the plan, so a change is
 * no plan change and a later `run` of the checkpoint keeps it; a threshold without a row is the
 * plan's. Every change is written with a `threshold.changed` audit event in the same transaction:
 * who (user, host, pid), when, what it was and what it is now. A read-only open of a checkpoint older
 * than schema 21 has no such table: nothing was changed there.
 */
import type Database from 'better-sqlite3';
import type { FailureBreaker } from '../plan/values.js';
import { LaterTable } from './introspect.js';

/** Who changed a threshold: the operator's user name, the host and the `shardmove control` process. */
export interface ThresholdBy {
  user: string;
  host: string;
  pid: number;
}

/** A rule's bound set live: the side it holds on is the plan's, the number the operator's. */
export interface RuleBound {
  op: 'above' | 'below';
  bound: number;
}

/**
 * A threshold's name and its value: the breaker (`off`: none), the throttle's latency p90 (ms), or a
 * throttle rule's bound (`rule:NAME`).
 */
export type ThresholdSetting =
  | { name: 'breaker'; value: FailureBreaker | 'off' }
  | { name: 'latency_p90'; value: number }
  | { name: `rule:${string}`; value: RuleBound };

export type ThresholdName = ThresholdSetting['name'];

/** One threshold set live, with when and by whom. */
export type ThresholdOverride = ThresholdSetting & { at: number; by: ThresholdBy };

/** Every threshold set live, ready to use: what is absent is the plan's. */
export interface LiveThresholds {
  /** The breaker in force instead of the plan's (null: turned off); undefined: the plan's. */
  breaker?: FailureBreaker | null;
  latencyP90Ms?: number;
  /** Rule name -> its bound in force. */
  rules: Record<string, RuleBound>;
  /** Each row, oldest change first, for status and the report. */
  overrides: ThresholdOverride[];
}

export const NO_THRESHOLDS: LiveThresholds = Object.freeze({ rules: {}, overrides: [] });

interface Row {
  name: string;
  value: string;
  at: number;
  by: string;
}

/** The table's statements, prepared as placeholders on a file without it. */
function thresholdStatements(w: (sql: string) => Database.Statement) {
  return {
    all: w('SELECT name, value, at, by FROM thresholds ORDER BY at, name'),
    put: w(
      `INSERT INTO thresholds (name, value, at, by) VALUES (?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value, at = excluded.at, by = excluded.by`,
    ),
    drop: w('DELETE FROM thresholds WHERE name = ?'),
  };
}

/** The `thresholds` table over an open checkpoint database. */
export class ThresholdTable extends LaterTable {
  private readonly s = thresholdStatements(this.prepare);

  constructor(db: Database.Database) {
    super(db, 'thresholds');
  }

  read(): LiveThresholds {
    if (!this.known) return NO_THRESHOLDS;
    const rows = this.s.all.all() as Row[];
    if (rows.length === 0) return NO_THRESHOLDS;
    const out: LiveThresholds = { rules: {}, overrides: [] };
    for (const row of rows) {
      const o = {
        name: row.name,
        value: JSON.parse(row.value) as unknown,
        at: row.at,
        by: JSON.parse(row.by) as ThresholdBy,
      };
      const set = o as ThresholdOverride;
      out.overrides.push(set);
      if (set.name === 'breaker') out.breaker = set.value === 'off' ? null : (set.value as FailureBreaker);
      else if (set.name === 'latency_p90') out.latencyP90Ms = set.value as number;
      else if (set.name.startsWith('rule:')) out.rules[set.name.slice('rule:'.length)] = set.value as RuleBound;
    }
    return out;
  }

  /** Sets one threshold (`value` null: back to the plan's, the row removed). The caller logs the change. */
  write(name: ThresholdName, value: ThresholdSetting['value'] | null, at: number, by: ThresholdBy): void {
    if (!this.known) throw new Error('the checkpoint has no thresholds table (opened read-only?)');
    if (value === null) this.s.drop.run(name);
    else this.s.put.run(name, JSON.stringify(value), at, JSON.stringify(by));
  }
}
