import { describe, expect, it } from 'vitest';
import { PrometheusError, parseAnswer } from '../api/prometheus.js';
import type { PromSample, PrometheusClient } from '../api/prometheus.js';
import type { ThrottleRule } from '../plan/values.js';
import { createRuleWatch, describeRule } from './rules.js';
import type { RuleChange } from './rules.js';

/** A Prometheus whose answers the test sets: samples, or an error thrown. */
function fakeProm(): PrometheusClient & { set(q: string, a: PromSample[] | Error): void } {
  const answers = new Map<string, PromSample[] | Error>();
  return {
    set: (q, a) => void answers.set(q, a),
    async query(q) {
      const a = answers.get(q) ?? [];
      if (a instanceof Error) throw a;
      return a;
    },
    async close() {},
  };
}

const rule = (over: Partial<ThrottleRule>): ThrottleRule => ({
  name: 'disk',
  query: 'q',
  above: 0.9,
  below: null,
  action: 'pause',
  forMs: 0,
  ...over,
});

describe('throttle rules', () => {
  it('holds at once without for, names the worst sample, and lets go', async () => {
    const prom = fakeProm();
    const changes: RuleChange[] = [];
    const w = createRuleWatch({
      rules: [rule({})],
      client: prom,
      everyMs: 1000,
      onError: 'pause',
      onChange: (c) => changes.push(c),
    });
    prom.set('q', [{ value: 0.5, labels: { device: 'sda' } }]);
    expect((await w.evaluate(0)).pause).toBeNull();
    prom.set('q', [
      { value: 0.5, labels: { device: 'sda' } },
      { value: 0.95, labels: { device: 'sdb' } },
    ]);
    // Within everyMs nothing is read again.
    expect((await w.evaluate(500)).pause).toBeNull();
    const v = await w.evaluate(1000);
    expect(v.pause).toMatchObject({
      rule: 'disk',
      status: 'holding',
      value: 0.95,
      labels: { device: 'sdb' },
      since: 1000,
    });
    expect(describeRule(v.pause!)).toBe('rule disk: 0.95 {device="sdb"} above 0.9');
    prom.set('q', [{ value: 0.1, labels: {} }]);
    expect((await w.evaluate(2000)).pause).toBeNull();
    expect(changes.map((c) => [c.previous, c.status])).toEqual([
      ['ok', 'holding'],
      ['holding', 'ok'],
    ]);
  });

  it('waits for `for` before acting, counted from when the condition began', async () => {
    const prom = fakeProm();
    const w = createRuleWatch({
      rules: [rule({ below: 100, above: null, action: 'cut', forMs: 5000 })],
      client: prom,
      everyMs: 1000,
      onError: 'pause',
    });
    prom.set('q', [{ value: 50, labels: {} }]);
    expect(await w.evaluate(0)).toEqual({ pause: null, cut: null });
    expect(w.states()[0]).toMatchObject({ status: 'pending', since: 0 });
    expect((await w.evaluate(4000)).cut).toBeNull();
    expect((await w.evaluate(5000)).cut).toMatchObject({ status: 'holding', since: 0 });
  });

  it('pauses on a failed query under on_error: pause, sets it aside under ignore', async () => {
    const prom = fakeProm();
    prom.set(
      'q',
      new PrometheusError('SHARDMOVE_PROMETHEUS_UNREACHABLE', 'Prometheus at http://p did not answer (ECONNREFUSED)'),
    );
    const paused = createRuleWatch({ rules: [rule({})], client: prom, everyMs: 1, onError: 'pause' });
    expect((await paused.evaluate(0)).pause).toMatchObject({
      status: 'error',
      error: expect.stringContaining('ECONNREFUSED'),
    });
    const ignored = createRuleWatch({ rules: [rule({})], client: prom, everyMs: 1, onError: 'ignore' });
    expect(await ignored.evaluate(0)).toEqual({ pause: null, cut: null });
    prom.set('q', []);
    expect((await paused.evaluate(10)).pause).toBeNull();
  });

  it('takes +Inf as above every bound and -Inf as below every bound; NaN stays no value', async () => {
    const prom = fakeProm();
    const w = createRuleWatch({
      rules: [
        rule({ name: 'full', query: 'ratio' }),
        rule({ name: 'room', query: 'free', above: null, below: 1e9 }),
        rule({ name: 'gap', query: 'nan' }),
      ],
      client: prom,
      everyMs: 1,
      onError: 'pause',
    });
    // A full destination: size / avail is +Inf; its free space, read through a ratio, -Inf.
    prom.set('ratio', [
      { value: 0.2, labels: { storage: 'a' } },
      { value: Number.POSITIVE_INFINITY, labels: { storage: 'cluster' } },
    ]);
    prom.set('free', [{ value: Number.NEGATIVE_INFINITY, labels: {} }]);
    prom.set('nan', [{ value: Number.NaN, labels: {} }]);
    const v = await w.evaluate(0);
    expect(v.pause).toMatchObject({ rule: 'full', status: 'holding', labels: { storage: 'cluster' } });
    expect(describeRule(v.pause!)).toBe('rule full: +Inf {storage="cluster"} above 0.9');
    const [, room, gap] = w.states();
    expect(room).toMatchObject({ status: 'holding', value: Number.NEGATIVE_INFINITY });
    expect(describeRule(room!)).toBe('rule room: -Inf below 1.000e+9');
    expect(gap).toMatchObject({ status: 'ok', value: null });
    // +Inf is never below a bound, -Inf never above one.
    prom.set('ratio', [{ value: Number.NEGATIVE_INFINITY, labels: {} }]);
    prom.set('free', [{ value: Number.POSITIVE_INFINITY, labels: {} }]);
    expect(await w.evaluate(1)).toEqual({ pause: null, cut: null });
  });

  it('reads the HTTP API envelope, and classifies its errors', () => {
    expect(
      parseAnswer(
        200,
        JSON.stringify({ status: 'success', data: { resultType: 'scalar', result: [1, '2.5'] } }),
        'http://p',
      ),
    ).toEqual([{ value: 2.5, labels: {} }]);
    expect(
      parseAnswer(
        200,
        JSON.stringify({
          status: 'success',
          data: { resultType: 'vector', result: [{ metric: { a: 'b' }, value: [1, '3'] }] },
        }),
        'http://p',
      ),
    ).toEqual([{ value: 3, labels: { a: 'b' } }]);
    expect(() =>
      parseAnswer(
        400,
        JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error at char 4' }),
        'http://p',
      ),
    ).toThrow(
      expect.objectContaining({
        code: 'SHARDMOVE_PROMETHEUS_REJECTED',
        message: expect.stringContaining('parse error at char 4'),
      }),
    );
    expect(() => parseAnswer(503, 'down', 'http://p')).toThrow(
      expect.objectContaining({ code: 'SHARDMOVE_PROMETHEUS_UNREACHABLE' }),
    );
    expect(() =>
      parseAnswer(200, JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [] } }), 'http://p'),
    ).toThrow(expect.objectContaining({ code: 'SHARDMOVE_PROMETHEUS_REJECTED' }));
  });
});
