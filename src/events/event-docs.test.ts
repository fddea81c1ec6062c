import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENTS_END, EVENTS_START, renderEventsTable, withEventsTable } from './event-docs.js';
import { RUN_EVENT_DOCS, RUN_EVENT_TYPES, RUN_OUTCOMES, RunEventSchema } from './run-events.js';

const EVENTS_DOC = resolve(import.meta.dirname, '../../docs/events.md');

describe('docs/events.md', () => {
  it('holds the table the declarations generate (run `npm run docs` after changing src/events/run-events.ts)', () => {
    const page = readFileSync(EVENTS_DOC, 'utf8');
    expect(page === withEventsTable(page), "docs/events.md's table of event types is stale: run `npm run docs`").toBe(
      true,
    );
  });

  it('has one row per type, in the declared order, each naming every field of its schema', () => {
    const rows = [...renderEventsTable().matchAll(/^\| `([^`]+)` \| (.*) \| /gm)];
    expect(rows.map((m) => m[1])).toEqual([...RUN_EVENT_TYPES]);
    for (const [i, option] of RunEventSchema.options.entries()) {
      const own = Object.keys(option.shape).filter((k) => !['v', 'seq', 'at', 'type'].includes(k));
      expect(own.length, option.shape.type.value).toBeGreaterThan(0);
      for (const field of own) expect(rows[i]?.[2], `${option.shape.type.value}.${field}`).toContain(`\`${field}\``);
    }
    expect(RUN_EVENT_DOCS.every((d) => d.when.length > 0)).toBe(true);
  });

  it('lists every outcome of run.finished with its exit code', () => {
    const page = readFileSync(EVENTS_DOC, 'utf8');
    for (const outcome of RUN_OUTCOMES)
      expect(page, outcome).toMatch(new RegExp(`^\\| \`${outcome}\` \\| \\d+ \\|`, 'm'));
  });

  it('replaces only what stands between the markers, and refuses a page without them', () => {
    const page = `# Events\n\nbefore\n${EVENTS_START}\nold table\n${EVENTS_END}\nafter\n`;
    const out = withEventsTable(page);
    expect(out.startsWith(`# Events\n\nbefore\n${EVENTS_START}\n`)).toBe(true);
    expect(out.endsWith(`\n${EVENTS_END}\nafter\n`)).toBe(true);
    expect(out).not.toContain('old table');
    expect(withEventsTable(out)).toBe(out);
    expect(() => withEventsTable('# Events\n')).toThrow(/markers/);
    expect(() => withEventsTable(`${EVENTS_END}\n${EVENTS_START}\n`)).toThrow(/markers/);
  });

  it('keeps a | in the words inside its cell', () => {
    const table = renderEventsTable([{ type: 'progress', fields: [{ name: 'a', words: 'x | y' }], when: 'p | q' }]);
    expect(table.split('\n')[2]).toBe('| `progress` | `a` (x \\| y) | p \\| q |');
  });
});
