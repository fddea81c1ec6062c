import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { PlanError } from './errors.js';
import { parsePlanText } from './load.js';
import { GITLAB_TOKEN_PREFIXES } from './secrets.js';
import { assertProperty } from '../../test/support/property.js';

const ENV = { GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB', N: '7' };
const opts = { env: ENV, baseDir: '/plans', readFile: () => ({ text: 'glpat-FromFile0123456789abcd', mode: 0o600 }) };

/** Loads or throws a PlanError whose every problem has a real position; anything else fails. */
function loadsOrPlanError(text: string): 'ok' | 'invalid' {
  try {
    parsePlanText(text, 'p.yaml', opts);
    return 'ok';
  } catch (err) {
    if (!(err instanceof PlanError)) throw err;
    expect(err.problems.length).toBeGreaterThan(0);
    const lines = text.split(/\r\n|\r|\n/);
    for (const p of [...err.problems, ...err.warnings]) {
      expect(p.file).toBe('p.yaml');
      expect(Number.isInteger(p.line) && Number.isInteger(p.col)).toBe(true);
      expect(p.line).toBeGreaterThanOrEqual(1);
      expect(p.line).toBeLessThanOrEqual(lines.length + 1);
      expect(p.col).toBeGreaterThanOrEqual(1);
      // The column points into its line (or just past its end, where YAML reports a missing value).
      if (p.line <= lines.length) expect(p.col).toBeLessThanOrEqual((lines[p.line - 1] as string).length + 2);
      expect(p.message).not.toBe('');
      // The loader's last-resort catch: reaching it means the walker has a bug.
      expect(p.message).not.toMatch(/please report this/);
    }
    expect(err.message.split('\n')).toHaveLength(1 + err.problems.length + err.warnings.length);
    return 'invalid';
  }
}

const yamlish = fc.stringMatching(/^[ a-z0-9:\-[\]{},#&*!|>'"\n${}_.]{0,120}$/);

const scalar = fc.oneof(
  fc.constantFrom(
    'nfs-1',
    'cluster',
    'throttled',
    'bulk',
    '5s',
    '30',
    '${GITLAB_URL}',
    '${GITLAB_TOKEN}',
    '${MISSING}',
    '$${X}',
    'projects',
    '',
  ),
  fc.integer({ min: -5, max: 2000 }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 12 }),
);
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('url', 'token', 'from', 'to', 'interval', 'x', 'resync'), tie('v'), { maxKeys: 4 }),
  ),
})).v;

const base = {
  version: 1,
  name: 'retire-nfs',
  instance: { url: '${GITLAB_URL}', token: '${GITLAB_TOKEN}' },
  move: { from: ['nfs-1', 'nfs-2'], to: 'cluster' },
};
const paths: Array<[string, string]> = [
  ['', 'version'],
  ['', 'name'],
  ['', 'verify'],
  ['', 'weights'],
  ['', 'poll'],
  ['', 'extra'],
  ['instance', 'url'],
  ['instance', 'token'],
  ['instance', 'token_file'],
  ['instance', 'oauth'],
  ['instance', 'sudo'],
  ['instance', 'timeout'],
  ['move', 'from'],
  ['move', 'to'],
  ['move', 'kinds'],
  ['move', 'mode'],
  ['move', 'concurrency'],
  ['move', 'concurency'],
];

describe('property: every input either loads or is a PlanError with positions', () => {
  it('arbitrary text', () => {
    assertProperty(
      fc.property(fc.string({ maxLength: 200 }), (t) => void loadsOrPlanError(t)),
      { numRuns: 300 },
    );
  });

  it('arbitrary YAML-looking text', () => {
    assertProperty(
      fc.property(yamlish, (t) => void loadsOrPlanError(t)),
      { numRuns: 300 },
    );
  });

  it('arbitrary plan-shaped objects', () => {
    assertProperty(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...paths), value), { maxLength: 4 }), (edits) => {
        const plan = structuredClone(base) as Record<string, Record<string, unknown> | unknown>;
        for (const [[section, key], v] of edits) {
          if (section === '') plan[key] = v;
          else if (plan[section] && typeof plan[section] === 'object' && !Array.isArray(plan[section]))
            (plan[section] as Record<string, unknown>)[key] = v;
        }
        loadsOrPlanError(stringify(plan));
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary objects at the top level', () => {
    assertProperty(
      fc.property(fc.object({ maxDepth: 3 }), (o) => void loadsOrPlanError(stringify(o))),
      { numRuns: 200 },
    );
  });
});

/** A plan with every section, as a plain object to mutate. */
const full = {
  version: 1,
  name: 'retire-nfs',
  instance: { url: '${GITLAB_URL}', token: '${GITLAB_TOKEN}', sudo: null, timeout: '30s' },
  move: {
    from: ['nfs-1', 'nfs-2'],
    to: 'cluster',
    kinds: ['projects', 'snippets', 'groups'],
    mode: 'throttled',
    concurrency: 10,
  },
  weights: { cluster: 100, 'nfs-1': 0, 'nfs-2': 0 },
  poll: { interval: '5s', stuck_after: '1h' },
  retry: { max_attempts: 3, backoff: '30s' },
  verify: true,
  geo: { resync: false },
};
const DURATION_FIELDS: Array<[string, string]> = [
  ['instance', 'timeout'],
  ['poll', 'interval'],
  ['poll', 'stuck_after'],
  ['retry', 'backoff'],
];
const FIELDS: string[][] = [
  ...Object.entries(full).flatMap(([k, v]) => [
    [k],
    ...(typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.keys(v).map((c) => [k, c]) : []),
  ]),
  ['move', 'from', '0'],
  ['move', 'kinds', '1'],
  ['instance', 'oauth'],
  ['instance', 'token_file'],
];

/** Durations as people might write them: valid, almost valid, and nonsense. */
const duration = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 10_000 }), fc.constantFrom('ms', 's', 'm', 'h')).map(([n, u]) => `${n}${u}`),
  fc.constantFrom(
    '1h30m',
    '30m1h',
    '1s1s',
    '5 s',
    ' 5s ',
    '5S',
    '5sec',
    '1.5s',
    '-5s',
    '+5s',
    '0',
    '0s',
    '30',
    '1e3ms',
    'PT5S',
    '5m30',
    'ms',
    '99999999999999999999h',
    '9007199254740991ms',
    '9007199254740992ms',
    '2562047788015h',
    '１s',
    '5\u0000s',
    '',
  ),
  fc.stringMatching(/^[0-9hms .+-]{0,10}$/),
  fc.integer({ min: -10, max: 100_000 }),
  fc.double({ noNaN: false }),
  fc.constantFrom(null, true, [], {}, ['5s']),
);

type Edit =
  | { op: 'set'; path: string[]; value: unknown }
  | { op: 'delete'; path: string[] }
  | { op: 'rename'; path: string[]; to: string }
  | { op: 'duration'; field: [string, string]; value: unknown };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), path: fc.constantFrom(...FIELDS), value }),
  fc.record({
    op: fc.constant('set' as const),
    path: fc
      .tuple(fc.constantFrom('', ...Object.keys(full)), fc.string({ maxLength: 8 }))
      .map(([a, b]) => (a ? [a, b] : [b])),
    value,
  }),
  fc.record({ op: fc.constant('delete' as const), path: fc.constantFrom(...FIELDS) }),
  fc.record({
    op: fc.constant('rename' as const),
    path: fc.constantFrom(...FIELDS),
    to: fc.constantFrom('Version', 'naem', 'from ', 'concurency', 'interval_ms', '', '<<', '~', '1'),
  }),
  fc.record({ op: fc.constant('duration' as const), field: fc.constantFrom(...DURATION_FIELDS), value: duration }),
);

/** Applies an edit to a plain-object plan; edits whose parent is not a mapping or list do nothing. */
function applyEdit(plan: Record<string, unknown>, e: Edit): void {
  const path = e.op === 'duration' ? e.field : e.path;
  let parent: unknown = plan;
  for (const k of path.slice(0, -1))
    parent = typeof parent === 'object' && parent !== null ? (parent as Record<string, unknown>)[k] : undefined;
  if (typeof parent !== 'object' || parent === null) return;
  const obj = parent as Record<string, unknown>;
  const key = path[path.length - 1] as string;
  if (e.op === 'set') obj[key] = e.value;
  else if (e.op === 'duration') obj[key] = e.value;
  else if (e.op === 'delete') delete obj[key];
  else if (key in obj) {
    obj[e.to] = obj[key];
    delete obj[key];
  }
}

describe('property: mutated valid plans', () => {
  it('the unmutated plan loads', () => {
    expect(loadsOrPlanError(stringify(full))).toBe('ok');
  });

  it('wrong types, extra, missing and renamed keys, odd durations: a plan or a PlanError with positions', () => {
    assertProperty(
      fc.property(
        fc.array(edit, { minLength: 1, maxLength: 5 }),
        fc.constantFrom<'block' | 'flow'>('block', 'flow'),
        (edits, style) => {
          const plan = structuredClone(full) as Record<string, unknown>;
          for (const e of edits) applyEdit(plan, e);
          const text = style === 'flow' ? stringify(plan, { collectionStyle: 'flow' }) : stringify(plan);
          if (loadsOrPlanError(text) === 'ok') {
            // Whatever loaded is usable: durations are whole, non-negative milliseconds.
            const { plan: p } = parsePlanText(text, 'p.yaml', opts);
            for (const ms of [p.poll.intervalMs, p.instance.timeoutMs])
              expect(Number.isSafeInteger(ms) && ms >= 0, String(ms)).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('durations: exactly the valid ones (or null, the default) load, with their value', () => {
    const UNIT = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
    const read = (p: ReturnType<typeof parsePlanText>['plan'], section: string): number =>
      section === 'instance' ? p.instance.timeoutMs : section === 'retry' ? p.retry.backoffMs : p.poll.intervalMs;
    assertProperty(
      fc.property(
        fc.constantFrom(...DURATION_FIELDS.filter(([, k]) => k !== 'stuck_after')),
        duration,
        ([section, key], d) => {
          const plan = structuredClone(full) as unknown as Record<string, Record<string, unknown>>;
          (plan[section] as Record<string, unknown>)[key] = d;
          const text = stringify(plan);
          const outcome = loadsOrPlanError(text);
          const m =
            typeof d === 'string' ? /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/.exec(d.trim()) : null;
          const expectedMs =
            m && d !== null && (d as string).trim() !== ''
              ? Number(m[1] ?? 0) * UNIT.h +
                Number(m[2] ?? 0) * UNIT.m +
                Number(m[3] ?? 0) * UNIT.s +
                Number(m[4] ?? 0) * UNIT.ms
              : undefined;
          if (outcome === 'ok') {
            expect(d === null || expectedMs !== undefined, `loaded ${JSON.stringify(d)}`).toBe(true);
            if (expectedMs !== undefined)
              expect(read(parsePlanText(text, 'p.yaml', opts).plan, section)).toBe(expectedMs);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** YAML constructs that are not plain data: anchors, aliases, merge keys, tags, several documents, odd whitespace. */
const yamlFragment = fc.constantFrom(
  'a: &x [1, 2]\nb: *x',
  'b: *nothing',
  '<<: { name: other }',
  'move: { <<: *m }',
  '!!binary aGVsbG8=',
  'name: !!int "5"',
  'verify: !!str true',
  'name: !custom thing',
  '--- \nversion: 1',
  '...',
  'version: 1\nversion: 2',
  '? [a, b]\n: c',
  '? { a: 1 }\n: b',
  '\tname: tab',
  '%YAML 1.2\n---',
  '%TAG ! tag:example.com,2000:\n---',
  'name: |\n  multi\n  line',
  'name: >-\n  folded',
  "name: 'unterminated",
  'name: "\\u00zz"',
  'x: &a [*a]',
  'l: &l [&m [&n [*l]]]',
  'n: .nan',
  't: 2001-12-14t21:59:43.10-05:00',
  's: !!set { a, b }',
  'o: !!omap [ a: 1 ]',
  '\ufeffversion: 1',
  'version: 1\r\nname: crlf',
  'k: [' + '['.repeat(200),
  'k: ' + '- '.repeat(60) + 'x',
  'poll: { interval: *d }\nd: &d 5s',
);
const lines = (text: string) => text.split('\n');

describe('property: YAML that is not plain data', () => {
  it('fragments inserted anywhere in a valid plan give a plan or a PlanError with positions', () => {
    assertProperty(
      fc.property(
        fc.array(fc.tuple(fc.nat(), yamlFragment, fc.constantFrom('', '  ', '    ')), { minLength: 1, maxLength: 3 }),
        (inserts) => {
          const ls = lines(stringify(full));
          for (const [at, fragment, indent] of inserts)
            ls.splice(at % (ls.length + 1), 0, ...lines(fragment).map((l) => indent + l));
          loadsOrPlanError(ls.join('\n'));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('an alias bomb is refused quickly as a PlanError', () => {
    const bomb = [
      'version: 1',
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...Array.from({ length: 9 }, (_, i) => {
        const prev = String.fromCharCode(97 + i);
        const cur = String.fromCharCode(98 + i);
        return `${cur}: &${cur} [*${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}]`;
      }),
    ].join('\n');
    const started = Date.now();
    expect(loadsOrPlanError(bomb)).toBe('invalid');
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('property: secrets', () => {
  const token = fc.tuple(fc.constantFrom(...GITLAB_TOKEN_PREFIXES), fc.stringMatching(/^[A-Za-z0-9_-]{20,40}$/));

  it('a literal token anywhere is refused and never repeated', () => {
    assertProperty(
      fc.property(token, fc.constantFrom(...paths), ([prefix, body], [section, key]) => {
        const plan = structuredClone(base) as Record<string, unknown>;
        const secret = `${prefix}${body}`;
        if (section === '') plan[key] = secret;
        else (plan[section] as Record<string, unknown>)[key] = secret;
        try {
          parsePlanText(stringify(plan), 'p.yaml', opts);
          expect.unreachable('a literal token must be refused');
        } catch (err) {
          expect(err).toBeInstanceOf(PlanError);
          expect((err as Error).message).not.toContain(body);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a token from the environment is accepted and stays out of messages of other problems', () => {
    assertProperty(
      fc.property(token, ([prefix, body]) => {
        const env = { ...ENV, GITLAB_TOKEN: `${prefix}${body}` };
        const good = parsePlanText(stringify(base), 'p.yaml', { ...opts, env });
        expect(good.plan.instance.credentials).toEqual({ type: 'token', token: `${prefix}${body}` });
        const bad = { ...base, move: { from: ['${GITLAB_TOKEN}'], to: '${GITLAB_TOKEN}' } };
        expect(() => parsePlanText(stringify(bad), 'p.yaml', { ...opts, env })).toThrow(PlanError);
        try {
          parsePlanText(stringify(bad), 'p.yaml', { ...opts, env });
        } catch (err) {
          expect((err as Error).message).not.toContain(body);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('property: valid plans', () => {
  const storage = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);

  it('load with what they say, and the hash ignores key order', () => {
    assertProperty(
      fc.property(
        fc.uniqueArray(storage, { minLength: 2, maxLength: 5 }),
        fc.subarray(['projects', 'snippets', 'groups'], { minLength: 1 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 100, max: 3_600_000 }),
        ([to, ...from], kinds, concurrency, intervalMs) => {
          const plan = { ...base, move: { from, to, kinds, concurrency }, poll: { interval: `${intervalMs}ms` } };
          const loaded = parsePlanText(stringify(plan), 'p.yaml', opts);
          expect(loaded.plan.move).toEqual({ from, to: [to], kinds, mode: 'throttled', concurrency, queueAhead: 0 });
          expect(loaded.plan.poll.intervalMs).toBe(intervalMs);
          const reordered = {
            poll: plan.poll,
            move: { concurrency, kinds, to, from },
            instance: plan.instance,
            name: plan.name,
            version: 1,
          };
          expect(parsePlanText(stringify(reordered), 'q.yaml', opts).hash).toBe(loaded.hash);
        },
      ),
      { numRuns: 200 },
    );
  });
});
