/**
 * Property: the JSON Schema and the loader agree on generated plans. Plans are generated from the
 * field table itself (every field, each with valid, out-of-range and wrong-typed values, absent,
 * null, unknown keys, sections of the wrong type). Whatever the schema refuses, the loader refuses;
 * whatever the loader refuses, the schema refuses too, unless every problem is one only the loader
 * can see: the environment, files, text that looks like a token, duration ranges (JSON Schema cannot
 * compare "90m" with "1h") and the rules that compare two fields.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { Field, FieldTable } from './field-table.js';
import { PlanError } from './errors.js';
import type { PlanProblem } from './errors.js';
import { parsePlanText } from './load.js';
import { formatPlanDuration } from '../time/durations.js';
import { HAS_VAR_REF } from './json-schema.js';
import { PLAN_FIELDS } from './plan-fields.js';
import { renderPlanJsonSchema } from './schema.js';
import { compilePlanSchema } from '../../test/support/plan-schema.js';
import { assertProperty } from '../../test/support/property.js';

const ENV = {
  GITLAB_URL: 'https://gitlab.example.com',
  GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB',
  N: '7',
  MODE: 'bulk',
  EMPTY: '',
};
const opts = { env: ENV, baseDir: '/plans', readFile: () => ({ text: 'glpat-FromFile0123456789abcd', mode: 0o600 }) };

/** Problems JSON Schema cannot see: they need the environment, a file, or two fields compared. */
const LOADER_ONLY_RULES = new Set([
  'destination-not-a-source',
  'weights-drain-sources',
  'durations-in-range',
  'queue-ahead-within-concurrency',
]);
function loaderOnly(p: PlanProblem, doc: unknown): boolean {
  if (p.rule && LOADER_ONLY_RULES.has(p.rule)) return true;
  // A value with a ${VAR} is judged after expansion: by the environment.
  const raw = valueAt(doc, p.path);
  if (typeof raw === 'string' && new RegExp(HAS_VAR_REF).test(raw)) return true;
  return /environment variable \S+ is not set|is empty \(the environment variable|looks like an access token|duration too large|file (not found|is empty)|cannot read/.test(
    p.message,
  );
}

/** The value at a problem's path (`move.from[1]`) in the parsed document. */
function valueAt(doc: unknown, path: string): unknown {
  let v = doc;
  for (const part of path.split(/\.|(?=\[)/).filter(Boolean)) {
    const key = part.startsWith('[') ? Number(part.slice(1, -1)) : part;
    v = v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[key] : undefined;
  }
  return v;
}

const anything = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -3, max: 3 }),
  fc.string({ maxLength: 6 }),
  fc.constant([]),
  fc.constant({}),
  fc.constant(['x']),
);
const duration = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 100_000 }), fc.constantFrom('ms', 's', 'm', 'h')).map(([n, u]) => `${n}${u}`),
  fc.constantFrom(
    '1h30m',
    '5s1m',
    '1s1s',
    ' 5s ',
    '5 s',
    '5S',
    '1.5s',
    '-5s',
    '0',
    '',
    '30',
    'ms',
    '${N}s',
    '${MISSING}',
    '$${N}',
    '${N',
    '99999999999999999999h',
  ),
  anything,
);
const integerValue = (min: number, max: number) =>
  fc.oneof(
    fc.integer({ min: min - 2, max: max + 2 }),
    fc.constantFrom(min, max, min - 1, max + 1, 1.5, '5', '${N}', '${MISSING}', 1e20),
    anything,
  );
const storage = fc.constantFrom(
  'nfs-1',
  'nfs-2',
  'cluster',
  'default',
  'a/b',
  'a b',
  '',
  'x'.repeat(256),
  '${MODE}',
  5,
  null,
);

/** Values for the fields with their own readers, by path: valid ones and each way to be wrong. */
const CUSTOM: Record<string, fc.Arbitrary<unknown>> = {
  version: fc.constantFrom(1, 2, '1', 1.0, null, 'one'),
  name: fc.constantFrom(
    'retire-nfs',
    'a',
    'x'.repeat(100),
    'x'.repeat(101),
    '../etc',
    'Retire',
    '-a',
    '',
    '${MODE}',
    '${MISSING}',
    5,
    null,
    ['a'],
  ),
  checkpoint: fc.constantFrom(
    'state/x.db',
    '/var/lib/shardmove/x.db',
    'runs/x y.db',
    '-x.db',
    'x.db',
    '.db',
    'a/.db',
    'dir/',
    'x.sqlite',
    '${MODE}.db',
    '~/x.db',
    'a\u0001b.db',
    'x.dry-run.db',
    'x.revert.db',
    'x.copy.db',
    '',
    5,
    null,
    ['x.db'],
  ),
  'instance.url': fc.constantFrom(
    '${GITLAB_URL}',
    'https://gitlab.example.com',
    'http://127.0.0.1:8080/gitlab/',
    'https://g.example.com/api/v4',
    'ftp://g.example.com',
    'https://u:p@g.example.com',
    'https://g.example.com/?a=1',
    'https://g.example.com/#x',
    'gitlab.example.com',
    'http://',
    '',
    'HTTPS://G.EXAMPLE.COM',
    ' https://g.example.com ',
    '${GITLAB_URL}/sub',
    '${GITLAB_URL',
    5,
    null,
    ['x'],
  ),
  'instance.sudo': fc.constantFrom(null, 1, 42, 0, -1, 1.5, 'root', ' root ', 'two words', '', '${MODE}', true),
  'move.from': fc.oneof(
    fc.array(storage, { maxLength: 3 }),
    fc.constantFrom(['nfs-1', 'nfs-1'], ['nfs-1', 'nfs-2', 'nfs-1']),
    anything,
  ),
  'move.to': storage,
  'move.kinds': fc.oneof(
    fc.array(fc.constantFrom('projects', 'snippets', 'groups', 'wikis', '', null, 5), { maxLength: 4 }),
    fc.constantFrom(['projects', 'projects']),
    anything,
  ),
  weights: fc.oneof(
    fc.dictionary(
      fc.constantFrom('cluster', 'nfs-1', 'nfs-2', 'other'),
      fc.oneof(fc.integer({ min: -2, max: 102 }), anything),
      { maxKeys: 3 },
    ),
    anything,
  ),
  // Zones the platform knows, or values of the wrong type: which names Intl knows is the loader's alone to say.
  schedule: fc.oneof(
    fc.record(
      {
        timezone: fc.constantFrom('UTC', 'Europe/Berlin', null, 5, ['UTC']),
        windows: fc.oneof(
          fc.array(
            fc.constantFrom(
              'Mon-Fri 22:00-06:00',
              'Sat 00:00-Mon 00:00',
              ' daily  01:00-03:00 ',
              'Mon 08:00-24:00',
              'Weekdays 9-5',
              'Mon-Fri 25:00-06:00',
              '',
              5,
              null,
            ),
            { maxLength: 3 },
          ),
          fc.constantFrom(null, 'Mon 01:00-02:00', 3),
        ),
        extra: fc.constant(1),
      },
      { requiredKeys: [] },
    ),
    anything,
  ),
  // The throttle is a section of the table: its durations come from there, its rates from here.
  'throttle.max_failure_rate': fc.constantFrom(0, 0.2, 1, 1.5, -0.1, '0.2', '${N}', null),
  'throttle.max_429_rate': fc.constantFrom(0.05, 2, null),
  'throttle.duration_drift': fc.constantFrom(1, 3, 0.5, 1001, null),
  'throttle.decrease': fc.constantFrom(0.05, 0.5, 0.95, 0.01, 1, null, 'half'),
};
const credentials = fc.record(
  {
    token: fc.constantFrom(
      '${GITLAB_TOKEN}',
      '${GITLAB_TOKEN}${N}',
      'hunter2',
      'x${GITLAB_TOKEN}',
      '${MISSING}',
      '${EMPTY}',
      '',
      null,
      5,
    ),
    token_file: fc.constantFrom('secrets/token', '', null, 5),
    oauth: fc.oneof(
      fc.record(
        {
          access_token: fc.constantFrom('${GITLAB_TOKEN}', 'literal', null),
          access_token_file: fc.constantFrom('a', null),
          refresh_token: fc.constantFrom('${GITLAB_TOKEN}', null),
          refresh_token_file: fc.constantFrom('r', null),
          client_id: fc.constantFrom('app-id', '', ' ', '${MODE}', null),
          client_secret_file: fc.constantFrom('s', null),
          redirect_uri: fc.constantFrom('http://localhost/cb', null),
          extra: fc.constant('x'),
        },
        { requiredKeys: [] },
      ),
      anything,
    ),
  },
  { requiredKeys: [] },
);

function valueFor(field: Field, path: string): fc.Arbitrary<unknown> {
  switch (field.type) {
    case 'duration':
      return duration;
    case 'integer':
      return integerValue(field.min, field.max);
    case 'boolean':
      return fc.oneof(fc.boolean(), fc.constantFrom('yes', 'true', '${MODE}', 1, null));
    case 'enum':
      return fc.oneof(fc.constantFrom(...field.values), fc.constantFrom('fast', '', '${MODE}', 3, null));
    case 'custom':
      return CUSTOM[path] ?? anything;
    case 'group':
      return credentials;
    case 'section':
      return sectionFor(field.fields, path);
  }
}

/** A mapping with some of the table's fields (and sometimes an unknown one), or something else. */
function sectionFor(table: FieldTable, path: string): fc.Arbitrary<unknown> {
  const entries = Object.entries(table).map(
    ([key, f]) => [key, fc.option(valueFor(f, path ? `${path}.${key}` : key), { nil: undefined, freq: 3 })] as const,
  );
  const mapping = fc
    .tuple(
      fc.record(Object.fromEntries(entries)),
      fc.option(fc.constantFrom('extra', 'concurency'), { nil: undefined, freq: 5 }),
    )
    .map(([rec, unknown]) => {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(rec)) {
        if (v === undefined) continue;
        const f = table[k];
        // A group's members are keys of the section itself.
        if (f?.type === 'group') Object.assign(out, v);
        else out[k] = v;
      }
      if (unknown) out[unknown] = 1;
      return out;
    });
  return path === ''
    ? mapping
    : fc.oneof({ arbitrary: mapping, weight: 8 }, { arbitrary: fc.constantFrom(null, 'text', [1]), weight: 1 });
}

/** Valid values of the fields with their own readers (cross-field rules aside, which the loader alone checks). */
const CUSTOM_VALID: Record<string, fc.Arbitrary<unknown>> = {
  version: fc.constant(1),
  name: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,20}$/),
  checkpoint: fc.constantFrom('state/x.db', '/var/lib/shardmove/x.db', 'runs/x y.db'),
  'instance.url': fc.constantFrom('${GITLAB_URL}', 'https://gitlab.example.com', 'http://127.0.0.1:8080/gitlab/'),
  'instance.sudo': fc.constantFrom(null, 1, 'root'),
  'move.from': fc.uniqueArray(fc.constantFrom('nfs-1', 'nfs-2', 'default'), { minLength: 1, maxLength: 3 }),
  'move.to': fc.constant('cluster'),
  'move.kinds': fc.subarray(['projects', 'snippets', 'groups'], { minLength: 1 }),
  weights: fc.constantFrom({ cluster: 100 }, { cluster: 50, 'nfs-1': 0 }, {}),
  schedule: fc.constantFrom(
    { windows: ['Mon-Fri 22:00-06:00'] },
    { timezone: 'Europe/Berlin', windows: ['Sat 00:00-Mon 00:00', 'daily 01:00-03:00'] },
  ),
  'throttle.max_failure_rate': fc.constantFrom(0, 0.1, 1),
  'throttle.decrease': fc.constantFrom(0.05, 0.5, 0.95),
};
const VALID_CREDENTIALS = fc.constantFrom<Record<string, unknown>>(
  { token: '${GITLAB_TOKEN}' },
  { token_file: 'secrets/token', token: null },
  {
    oauth: {
      access_token: '${GITLAB_TOKEN}',
      refresh_token_file: 'r',
      client_id: 'app',
      client_secret: '${GITLAB_TOKEN}',
      redirect_uri: 'http://localhost/cb',
    },
  },
);

/** A valid value for a field (a valid mapping for a section: required fields always, others sometimes). */
function validFor(field: Field, path: string): fc.Arbitrary<unknown> {
  switch (field.type) {
    case 'duration':
      return fc.integer({ min: field.min, max: field.max }).map(formatPlanDuration);
    case 'integer':
      return fc.oneof(fc.integer({ min: field.min, max: field.max }), fc.constant(null));
    case 'boolean':
      return fc.oneof(fc.boolean(), fc.constant(null));
    case 'enum':
      return fc.constantFrom(...field.values, null);
    case 'custom':
      return CUSTOM_VALID[path] ?? fc.constant(field.default);
    case 'group':
      return VALID_CREDENTIALS;
    case 'section': {
      const entries = Object.entries(field.fields).map(([key, f]) => {
        const v = validFor(f, path ? `${path}.${key}` : key);
        return [key, f.required || f.type === 'group' ? v : fc.option(v, { nil: undefined })] as const;
      });
      return fc.record(Object.fromEntries(entries)).map((rec) => {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(rec)) {
          if (v === undefined) continue;
          if (field.fields[k]?.type === 'group') Object.assign(out, v);
          else out[k] = v;
        }
        return out;
      });
    }
  }
}

/** Every key a plan can have, with the field it belongs to: `poll.interval`, `instance.token` ... */
function leafKeys(table: FieldTable, path = ''): Array<{ path: string; value: fc.Arbitrary<unknown> }> {
  return Object.entries(table).flatMap(([key, f]) => {
    const p = path ? `${path}.${key}` : key;
    if (f.type === 'group')
      return Object.keys(f.members).map((m) => ({
        path: path ? `${path}.${m}` : m,
        value: fc.oneof(
          credentials.map((c) => (c as Record<string, unknown>)[m]),
          anything,
        ),
      }));
    const own = { path: p, value: valueFor(f, p) };
    return f.type === 'section' ? [own, ...leafKeys(f.fields, p)] : [own];
  });
}
const LEAVES = leafKeys(PLAN_FIELDS);

type Mutation = { path: string; value: unknown } | { path: string; delete: true } | { path: string; unknown: string };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...LEAVES).chain((l) => l.value.map((value) => ({ path: l.path, value }))) },
  { weight: 1, arbitrary: fc.constantFrom(...LEAVES).map((l) => ({ path: l.path, delete: true as const })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom('', 'instance', 'move', 'poll', 'retry', 'geo'),
        fc.constantFrom('extra', 'concurency', 'Version'),
      )
      .map(([path, unknown]) => ({ path, unknown })),
  },
);

function applyMutation(plan: Record<string, unknown>, m: Mutation): void {
  const parts = m.path ? m.path.split('.') : [];
  const key = 'unknown' in m ? m.unknown : parts.pop()!;
  let parent: unknown = plan;
  for (const k of parts) {
    const child = (parent as Record<string, unknown>)[k];
    if (child === null || typeof child !== 'object' || Array.isArray(child))
      (parent as Record<string, unknown>)[k] = {};
    parent = (parent as Record<string, unknown>)[k];
  }
  const obj = parent as Record<string, unknown>;
  if ('delete' in m) delete obj[key];
  else obj[key] = 'value' in m ? m.value : 1;
}

/** A valid plan from the table with 0-2 fields set to anything, deleted, or an unknown key added. */
const mutatedPlan = fc
  .tuple(
    validFor({ type: 'section', fields: PLAN_FIELDS, description: '', required: true }, ''),
    fc.array(mutation, { maxLength: 2 }),
  )
  .map(([plan, ms]) => {
    const out = structuredClone(plan) as Record<string, unknown>;
    for (const m of ms) applyMutation(out, m);
    return out;
  });
const anyPlan = sectionFor(PLAN_FIELDS, '');
const good = {
  version: 1,
  name: 'retire-nfs',
  instance: { url: '${GITLAB_URL}', token: '${GITLAB_TOKEN}' },
  move: { from: ['nfs-1', 'nfs-2'], to: 'cluster' },
};

const validate = compilePlanSchema(renderPlanJsonSchema());

function loaderProblems(text: string): PlanProblem[] {
  try {
    parsePlanText(text, 'p.yaml', opts);
    return [];
  } catch (err) {
    if (!(err instanceof PlanError)) throw err;
    return err.problems;
  }
}

function agree(plan: unknown): void {
  const text = stringify(plan);
  const doc: unknown = parse(text);
  const schemaOk = validate(doc) as boolean;
  const problems = loaderProblems(text);
  const show = () =>
    `${text}\nschema: ${JSON.stringify(validate.errors?.slice(0, 3))}\nloader: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`;
  if (!schemaOk) expect(problems.length, `the schema refuses what the loader accepts:\n${show()}`).toBeGreaterThan(0);
  else
    expect(
      problems.filter((p) => !loaderOnly(p, doc)),
      `the loader refuses what the schema accepts:\n${show()}`,
    ).toEqual([]);
}

describe('property: the JSON Schema and the loader agree', () => {
  it('on plans generated from the field table', () => {
    assertProperty(fc.property(anyPlan, agree), { numRuns: Number(process.env.AGREE_RUNS ?? 400) });
  });

  it('on valid plans from the field table with up to two fields changed to anything', () => {
    assertProperty(fc.property(mutatedPlan, agree), { numRuns: Number(process.env.AGREE_RUNS ?? 600) });
  });

  it('an optional section with a required field is refused by both when null', () => {
    const plan = { ...good, prometheus: null };
    expect(validate(plan)).toBe(false);
    expect(loaderProblems(stringify(plan)).map((p) => p.path)).toEqual(['prometheus.url']);
  });

  it('the good base plan passes both', () => {
    expect(validate(good)).toBe(true);
    expect(loaderProblems(stringify(good))).toEqual([]);
  });
});
