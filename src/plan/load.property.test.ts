import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { PlanError } from './errors.js';
import { parsePlanText } from './load.js';
import { GITLAB_TOKEN_PREFIXES } from './secrets.js';

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
    const lines = text.split(/\r\n|\r|\n/).length;
    for (const p of [...err.problems, ...err.warnings]) {
      expect(p.file).toBe('p.yaml');
      expect(p.line).toBeGreaterThanOrEqual(1);
      expect(p.line).toBeLessThanOrEqual(lines + 1);
      expect(p.col).toBeGreaterThanOrEqual(1);
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
  fc.constantFrom('nfs-1', 'cluster', 'throttled', 'bulk', '5s', '30', '${GITLAB_URL}', '${GITLAB_TOKEN}', '${MISSING}', '$${X}', 'projects', ''),
  fc.integer({ min: -5, max: 2000 }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 12 }),
);
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(fc.constantFrom('url', 'token', 'from', 'to', 'interval', 'x', 'resync'), tie('v'), { maxKeys: 4 })),
})).v;

const base = {
  version: 1,
  name: 'retire-nfs',
  instance: { url: '${GITLAB_URL}', token: '${GITLAB_TOKEN}' },
  move: { from: ['nfs-1', 'nfs-2'], to: 'cluster' },
};
const paths: Array<[string, string]> = [
  ['', 'version'], ['', 'name'], ['', 'verify'], ['', 'weights'], ['', 'poll'], ['', 'extra'],
  ['instance', 'url'], ['instance', 'token'], ['instance', 'token_file'], ['instance', 'oauth'], ['instance', 'sudo'], ['instance', 'timeout'],
  ['move', 'from'], ['move', 'to'], ['move', 'kinds'], ['move', 'mode'], ['move', 'concurrency'], ['move', 'concurency'],
];

describe('property: every input either loads or is a PlanError with positions', () => {
  it('arbitrary text', () => {
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (t) => void loadsOrPlanError(t)), { numRuns: 300 });
  });

  it('arbitrary YAML-looking text', () => {
    fc.assert(fc.property(yamlish, (t) => void loadsOrPlanError(t)), { numRuns: 300 });
  });

  it('arbitrary plan-shaped objects', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...paths), value), { maxLength: 4 }), (edits) => {
        const plan = structuredClone(base) as Record<string, Record<string, unknown> | unknown>;
        for (const [[section, key], v] of edits) {
          if (section === '') plan[key] = v;
          else if (plan[section] && typeof plan[section] === 'object' && !Array.isArray(plan[section])) (plan[section] as Record<string, unknown>)[key] = v;
        }
        loadsOrPlanError(stringify(plan));
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary objects at the top level', () => {
    fc.assert(fc.property(fc.object({ maxDepth: 3 }), (o) => void loadsOrPlanError(stringify(o))), { numRuns: 200 });
  });
});

describe('property: secrets', () => {
  const token = fc.tuple(fc.constantFrom(...GITLAB_TOKEN_PREFIXES), fc.stringMatching(/^[A-Za-z0-9_-]{20,40}$/));

  it('a literal token anywhere is refused and never repeated', () => {
    fc.assert(
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
    fc.assert(
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
    fc.assert(
      fc.property(
        fc.uniqueArray(storage, { minLength: 2, maxLength: 5 }),
        fc.subarray(['projects', 'snippets', 'groups'], { minLength: 1 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 100, max: 3_600_000 }),
        ([to, ...from], kinds, concurrency, intervalMs) => {
          const plan = { ...base, move: { from, to, kinds, concurrency }, poll: { interval: `${intervalMs}ms` } };
          const loaded = parsePlanText(stringify(plan), 'p.yaml', opts);
          expect(loaded.plan.move).toEqual({ from, to, kinds, mode: 'throttled', concurrency });
          expect(loaded.plan.poll.intervalMs).toBe(intervalMs);
          const reordered = { poll: plan.poll, move: { concurrency, kinds, to, from }, instance: plan.instance, name: plan.name, version: 1 };
          expect(parsePlanText(stringify(reordered), 'q.yaml', opts).hash).toBe(loaded.hash);
        },
      ),
      { numRuns: 200 },
    );
  });
});
