import { describe, expect, it } from 'vitest';
import { PlanError } from './errors.js';
import { parsePlanText } from './load.js';

const ENV = {
  GITLAB_URL: 'https://gitlab.example.com',
  GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB',
  PROM_TOKEN: 'prom-secret-1234567',
};
const MINIMAL = `version: 1
name: room
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [default]
  to: storage2
`;

function parse(text: string) {
  return parsePlanText(text, 'plan.yml', { env: ENV, baseDir: '/tmp' });
}

function problems(text: string): string[] {
  try {
    parse(text);
    return [];
  } catch (err) {
    if (!(err instanceof PlanError)) throw err;
    return err.problems.map((p) => `${p.line}:${p.col} ${p.path ?? ''} ${p.message}`);
  }
}

describe('prometheus and throttle.rules', () => {
  it('reads them, off when absent', () => {
    const bare = parse(MINIMAL).plan;
    expect(bare.prometheus).toBeUndefined();
    const { plan } = parse(
      `${MINIMAL}prometheus:\n  url: http://localhost:9090/\n  token: \${PROM_TOKEN}\nthrottle:\n  rules:\n    - {name: disk-busy, query: 'max(x)', above: 0.9, action: pause, for: 2m}\n    - {name: room, query: 'min(y)', below: 1e9, action: cut}\n`,
    );
    expect(plan.prometheus).toEqual({
      url: 'http://localhost:9090',
      token: 'prom-secret-1234567',
      timeoutMs: 10_000,
      onError: 'pause',
    });
    expect(plan.throttle?.rules).toEqual([
      { name: 'disk-busy', query: 'max(x)', above: 0.9, below: null, action: 'pause', forMs: 120_000 },
      { name: 'room', query: 'min(y)', above: null, below: 1e9, action: 'cut', forMs: 0 },
    ]);
  });

  it('reports every problem at its line:col', () => {
    expect(problems(`${MINIMAL}throttle:\n  rules:\n    - {name: a, query: 'x', above: 1, action: pause}\n`)).toEqual([
      expect.stringMatching(/throttle\.rules the rules query Prometheus/),
    ]);
    expect(
      problems(
        `${MINIMAL}prometheus: {url: 'http://p:9090'}\nthrottle:\n  rules:\n    - {name: a, query: 'x', action: stop, abov: 1}\n`,
      ),
    ).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^12:\d+ throttle\.rules\[0\]\.abov unknown field/),
        expect.stringMatching(/^12:\d+ throttle\.rules\[0\]\.action/),
        expect.stringMatching(/throttle\.rules\[0\]\.above set one of above or below/),
      ]),
    );
    expect(
      problems(
        `${MINIMAL}prometheus: {url: 'http://p:9090'}\nthrottle:\n  rules:\n    - {name: a, query: 'x', above: 1, action: cut}\n    - {name: a, query: 'y', above: 1, below: 2, action: cut}\n    - {name: a, query: 'y', above: 1, action: cut}\n`,
      ),
    ).toEqual([
      expect.stringMatching(/rules\[1\]\.below set either above or below/),
      expect.stringMatching(/rules\[2\]\.name rule "a" is listed twice/),
    ]);
    expect(problems(`${MINIMAL}prometheus: {url: 'ftp://p', tokn: 1}\n`)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/prometheus\.tokn unknown field/),
        expect.stringMatching(/prometheus\.url must be an http/),
      ]),
    );
    expect(problems(`${MINIMAL}prometheus: {url: 'http://p', token: literal-secret}\n`)).toEqual([
      expect.stringMatching(/prometheus\.token a literal secret is not allowed/),
    ]);
    expect(problems(`${MINIMAL}prometheus: {}\n`)).toEqual([
      expect.stringMatching(/prometheus\.url missing required field url/),
    ]);
  });

  it('reads capacity: sizes, queries, and the destination named', () => {
    const { plan } = parse(
      `${MINIMAL}prometheus: {url: 'http://p:9090'}\ncapacity:\n  keep_free: 100GiB\n  storages:\n    storage2: {free: 'node_filesystem_avail_bytes{storage="storage2"}'}\n    other: {free: 2TiB}\n`,
    );
    expect(plan.capacity).toEqual({
      keepFreeBytes: 100 * 2 ** 30,
      storages: {
        storage2: { query: 'node_filesystem_avail_bytes{storage="storage2"}' },
        other: { bytes: 2 * 2 ** 40 },
      },
    });
    expect(problems(`${MINIMAL}capacity:\n  keep_free: lots\n  storages:\n    other: {free: 1TB}\n`)).toEqual([
      expect.stringMatching(/^10:14 capacity\.keep_free expected bytes/),
    ]);
    expect(problems(`${MINIMAL}capacity:\n  storages:\n    other: {free: 1TB}\n`)).toEqual([
      expect.stringMatching(/capacity\.storages name the destination: storage2/),
    ]);
    expect(problems(`${MINIMAL}capacity:\n  storages:\n    storage2: {free: 'max(x)'}\n`)).toEqual([
      expect.stringMatching(/storage2\.free a PromQL query needs prometheus/),
    ]);
  });

  it('refuses sizes of 8 PiB (2^53 bytes) and more at their line:col, written as numbers or with units', () => {
    const plan = (capacity: string, until = '') =>
      `${MINIMAL.replace('  to: storage2\n', `  to: storage2\n${until}`)}capacity:\n${capacity}`;
    expect(
      problems(
        plan(
          '  keep_free: 1e23\n  storages:\n    storage2: {free: 100000000PiB}\n    other: {free: 9007199254740993}\n',
          '  until: {moved: 1e23}\n',
        ),
      ),
    ).toEqual([
      '9:18 move.until.moved is 8 PiB (2^53 bytes) or more, more than any storage holds: check the figure and its unit',
      expect.stringMatching(/^11:14 capacity\.keep_free is 8 PiB \(2\^53 bytes\) or more/),
      expect.stringMatching(/^13:22 capacity\.storages\.storage2\.free is 8 PiB/),
      expect.stringMatching(/^14:19 capacity\.storages\.other\.free is 8 PiB/),
    ]);
    expect(problems(plan('  storages:\n    storage2: {free: 1TB}\n', '  until: {free: 8PiB}\n'))).toEqual([
      expect.stringMatching(/^9:17 move\.until\.free is 8 PiB/),
    ]);
    // Just under 8 PiB is a size.
    const { plan: ok } = parse(
      plan(
        '  keep_free: 9007199254740991\n  storages:\n    storage2: {free: 7PiB}\n    default: {free: 1TiB}\n',
        '  until: {free: 7.5PiB}\n',
      ),
    );
    expect(ok.capacity?.keepFreeBytes).toBe(2 ** 53 - 1);
    expect(ok.move.until).toEqual({ freeBytes: 7.5 * 2 ** 50 });
  });

  it('the hash ignores the Prometheus token (a rotated credential is no plan change) but not the URL', () => {
    const withToken = (t: string, url = 'http://p:9090') =>
      parsePlanText(`${MINIMAL}prometheus: {url: '${url}', token: '\${PROM}'}\n`, 'plan.yml', {
        env: { ...ENV, PROM: t },
        baseDir: '/tmp',
      }).hash;
    expect(withToken('first-token-123456')).toBe(withToken('second-token-654321'));
    expect(withToken('first-token-123456')).not.toBe(withToken('first-token-123456', 'http://q:9090'));
  });
});
