/**
 * schema/plan.schema.json: generated from the field table, checked in, valid JSON Schema, and every
 * example plan (plans/*.yaml, and those shown in README.md and docs/) passes it and names it in its modeline.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compilePlanSchema, PLAN_SCHEMA_FILE } from '../../test/support/plan-schema.js';
import { renderPlanJsonSchema } from './schema.js';

const ROOT = resolve(import.meta.dirname, '../..');
const MODELINE = /^# yaml-language-server: \$schema=(\S+)$/m;

/** Move plans in plans/ (the sandbox's seed file lives there too, and copy plans have their own loader). */
function examplePlans(): Array<{ name: string; text: string }> {
  return readdirSync(join(ROOT, 'plans'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => ({ name: `plans/${f}`, text: readFileSync(join(ROOT, 'plans', f), 'utf8') }))
    .filter((p) => /^version:/m.test(p.text) && !/^copy:/m.test(p.text));
}

/**
 * Whole plans shown in README.md and docs/*.md (yaml blocks with a version line). A block inside a
 * list item is indented; its indent is taken off.
 */
function documentedPlans(): Array<{ name: string; text: string }> {
  const pages = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  return pages.flatMap((page) =>
    [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^( *)```yaml\n([\s\S]*?)^\1```/gm)]
      .map((m, i) => ({ name: `${page} yaml block ${i + 1}`, text: m[2]!.replace(new RegExp(`^${m[1]}`, 'gm'), '') }))
      .filter((p) => /^version:/m.test(p.text) && !/^copy:/m.test(p.text)),
  );
}

describe('schema/plan.schema.json', () => {
  it('is what the field table generates (run `npm run schema` after changing src/plan/plan-fields.ts)', () => {
    const checkedIn = readFileSync(PLAN_SCHEMA_FILE, 'utf8');
    expect(
      checkedIn === renderPlanJsonSchema(),
      'schema/plan.schema.json is stale: run `npm run schema` and commit it',
    ).toBe(true);
  });

  it('compiles as draft-07 in ajv strict mode', () => {
    expect(() => compilePlanSchema()).not.toThrow();
  });

  it('every example plan passes it and carries the yaml-language-server modeline', () => {
    const validate = compilePlanSchema();
    const examples = [...examplePlans(), ...documentedPlans()];
    expect(examples.map((e) => e.name)).toEqual(expect.arrayContaining(['plans/demo.yaml', 'plans/example.yaml']));
    expect(examples.length).toBeGreaterThanOrEqual(3);
    for (const { name, text } of examples) {
      const ok = validate(parse(text));
      expect(ok, `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(MODELINE.exec(text)?.[1], `${name} has no modeline`).toMatch(/schema\/plan\.schema\.json$/);
    }
    for (const { name, text } of examplePlans())
      expect(MODELINE.exec(text)?.[1], name).toBe('../schema/plan.schema.json');
  });

  it('refuses what the loader refuses for the same reason: a few by hand', () => {
    const validate = compilePlanSchema();
    const base = parse(readFileSync(join(ROOT, 'plans/example.yaml'), 'utf8')) as Record<
      string,
      Record<string, unknown>
    >;
    const bad: Array<[string, (p: Record<string, Record<string, unknown>>) => void]> = [
      ['unknown field', (p) => void (p.move!.concurency = 5)],
      ['literal token', (p) => void (p.instance!.token = 'hunter2')],
      ['two credentials', (p) => void (p.instance!.token_file = 'token')],
      ['no credentials', (p) => void delete p.instance!.token],
      ['bare number duration', (p) => void (p.poll!.interval = 5)],
      ['duration units out of order', (p) => void (p.poll!.interval = '5s1m')],
      ['concurrency out of range', (p) => void (p.move!.concurrency = 0)],
      ['kind listed twice', (p) => void (p.move!.kinds = ['projects', 'projects'])],
      ['source listed twice', (p) => void (p.move!.from = ['a', 'a'])],
      ['storage with a slash', (p) => void (p.move!.to = 'a/b')],
      ['malformed ${', (p) => void (p.instance!.url = '${GITLAB_URL')],
      ['stuck_after with stuck_running_after', (p) => void (p.poll = { stuck_after: '1h', stuck_running_after: '1h' })],
      ['weight above 100', (p) => void (p.weights = { cluster: 101 })],
      ['version 2', (p) => void ((p as Record<string, unknown>).version = 2)],
    ];
    expect(validate(base)).toBe(true);
    for (const [why, change] of bad) {
      const p = structuredClone(base);
      change(p);
      expect(validate(p), why).toBe(false);
    }
  });
});
