/**
 * docs/plan.md's field table: generated from the field table (plan-fields.ts), checked in, and with
 * a row for every key the loader reads.
 */
import { UNTIL_KEYS } from './target-fields.js';
import { SELECT_KEYS } from './select-field.js';
import { PAUSE_AFTER_KEYS } from './breaker-field.js';
import { RULE_KEYS } from './rules-field.js';
import { CAPACITY_KEYS } from './capacity-field.js';
import { NOTIFY_KEYS } from './notify-field.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIELDS_END, FIELDS_START, escapeMarkdown, renderFieldsTable, withFieldsTable } from './field-docs.js';
import type { FieldTable } from './field-table.js';
import { PLAN_FIELDS } from './plan-fields.js';
import { SCHEDULE_FIELDS } from './schedule-fields.js';

const PLAN_DOC = resolve(import.meta.dirname, '../../docs/plan.md');

/** Every YAML key the table's walker accepts, as dotted paths (a group's members stand for it). */
function keyPaths(table: FieldTable, parent = ''): string[] {
  return Object.entries(table).flatMap(([key, f]) => {
    const path = parent ? `${parent}.${key}` : key;
    if (f.type === 'section') return keyPaths(f.fields, path);
    if (f.type === 'group') return Object.keys(f.members).map((m) => (parent ? `${parent}.${m}` : m));
    return [path];
  });
}

describe('docs/plan.md field table', () => {
  it('is what the field table generates (run `npm run schema` after changing src/plan/plan-fields.ts)', () => {
    const page = readFileSync(PLAN_DOC, 'utf8');
    expect(
      page === withFieldsTable(page),
      "docs/plan.md's field table is stale: run `npm run schema` and commit it",
    ).toBe(true);
  });

  it('has one row for every key a plan can hold, the throttle and schedule keys included', () => {
    const rows = [...renderFieldsTable().matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
    const keys = [
      ...keyPaths(PLAN_FIELDS),
      ...SCHEDULE_FIELDS.map((k) => `schedule.${k}`),
      ...PAUSE_AFTER_KEYS.map((k) => `retry.pause_after.${k}`),
      ...RULE_KEYS.map((k) => `throttle.rules[].${k}`),
      ...CAPACITY_KEYS.map((k) => `capacity.${k}`),
      ...UNTIL_KEYS.map((k) => `move.until.${k}`),
      ...SELECT_KEYS.map((k) => `move.select.${k}`),
      ...NOTIFY_KEYS.map((k) => `notify[].${k}`),
    ];
    expect([...rows].sort()).toEqual([...keys].sort());
    expect(rows).toEqual([...new Set(rows)]);
  });

  it('shows types, defaults and ranges from the entries, and what the entries add', () => {
    const table = renderFieldsTable();
    expect(table).toContain('| `instance.timeout` | duration | `30s` | `1s` to `10m` | Per-request timeout. |');
    expect(table).toContain('| `move.mode` | string | `throttled` | `throttled`, `bulk` |');
    expect(table).toContain('| `move.kinds` | list | `[projects, snippets, groups]` |');
    expect(table).toContain(
      '| `poll.stuck_running_after` | duration | `1h` | `1s` to `168h`; below `1m` is warned about |',
    );
    expect(table).toContain('| `throttle.latency_p90` | duration | `2s` |');
    expect(table).toMatch(
      /\| `poll\.stuck_after` \| duration \| {2}\| .*Deprecated: write poll\.stuck_running_after\./,
    );
  });

  it('needs a type for a field whose kind does not say it, and rows for exactly the keys its schema accepts', () => {
    const custom = { type: 'custom', description: 'x', prop: 'x', default: null, read: () => null } as const;
    expect(() => renderFieldsTable({ x: { ...custom, schema: {} } })).toThrow(/x: its type cannot be shown/);
    const keyed: FieldTable = {
      x: {
        ...custom,
        schema: { properties: { a: {}, b: {} } },
        doc: { type: 'mapping', keys: { a: { type: 'string', meaning: 'A.' } } },
      },
    };
    expect(() => renderFieldsTable(keyed)).toThrow(/doc\.keys \(a\) must list the keys its schema accepts \(a, b\)/);
  });

  it('escapes markdown in descriptions, but not inside code spans', () => {
    expect(escapeMarkdown('state/<name>.db, [a-z0-9_-]*, ${VAR}, `a_b|*`, repository_storages_weighted')).toBe(
      'state/&lt;name>.db, [a-z0-9\\_-]\\*, \\${VAR}, `a_b\\|*`, repository_storages_weighted',
    );
  });

  it('replaces only what is between the markers, and refuses a page without them', () => {
    const page = `# Plan\n\nbefore\n${FIELDS_START}\nold table\n${FIELDS_END}\nafter\n`;
    const out = withFieldsTable(page);
    expect(out.startsWith(`# Plan\n\nbefore\n${FIELDS_START}\n`)).toBe(true);
    expect(out.endsWith(`\n${FIELDS_END}\nafter\n`)).toBe(true);
    expect(out).not.toContain('old table');
    expect(withFieldsTable(out)).toBe(out);
    expect(() => withFieldsTable('# Plan\n')).toThrow(/markers/);
    expect(() => withFieldsTable(`${FIELDS_END}\n${FIELDS_START}\n`)).toThrow(/markers/);
  });
});
