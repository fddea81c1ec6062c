import { describe, expect, it } from 'vitest';
import { PlanError } from './errors.js';
import { parsePlanText } from './load.js';
import { concurrencyCeiling, describeConcurrency, fixedConcurrency } from './concurrency-field.js';

const ENV = { GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB', CONC: 'auto' };

const plan = (concurrency: string) => `version: 1
name: retire-nfs
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1]
  to: cluster
  concurrency: ${concurrency}
`;

const parse = (text: string) =>
  parsePlanText(text, 'plan.yaml', { env: ENV, baseDir: '/plans', readFile: () => undefined });

function problems(text: string): string[] {
  try {
    parse(text);
  } catch (err) {
    expect(err).toBeInstanceOf(PlanError);
    return (err as PlanError).problems.map((p) => `${p.line}:${p.col} ${p.path} ${p.message}`);
  }
  throw new Error('expected a PlanError');
}

describe('move.concurrency: a number or auto', () => {
  it('reads a number as before, and auto with the default bounds or its own', () => {
    expect(parse(plan('8')).plan.move.concurrency).toBe(8);
    expect(parse(plan('auto')).plan.move.concurrency).toEqual({ auto: { min: 2, max: 64 } });
    expect(parse(plan('"${CONC}"')).plan.move.concurrency).toEqual({ auto: { min: 2, max: 64 } });
    expect(parse(plan('{auto: {min: 4, max: 32}}')).plan.move.concurrency).toEqual({ auto: { min: 4, max: 32 } });
    expect(parse(plan('{auto: {max: 16}}')).plan.move.concurrency).toEqual({ auto: { min: 2, max: 16 } });
    expect(parse(plan('{auto: }')).plan.move.concurrency).toEqual({ auto: { min: 2, max: 64 } });
  });

  it('reports a bad value at its line and column', () => {
    expect(problems(plan('0'))).toEqual([
      '9:16 move.concurrency expected a whole number from 1 to 1000, auto, or {auto: {min: 2, max: 64}}',
    ]);
    expect(problems(plan('automatic'))).toEqual([
      '9:16 move.concurrency expected a whole number from 1 to 1000, auto, or {auto: {min: 2, max: 64}}',
    ]);
    expect(problems(plan('{auto: {min: 0, max: 2000}}'))).toEqual([
      '9:29 move.concurrency.auto.min expected a whole number from 1 to 1000',
      '9:37 move.concurrency.auto.max expected a whole number from 1 to 1000',
    ]);
    expect(problems(plan('{auto: {min: 40, max: 20}}'))).toEqual([
      '9:23 move.concurrency.auto min (40) is more than max (20): the limiter keeps the cap between them',
    ]);
    expect(problems(plan('{auto: {mni: 4}}'))).toEqual([
      '9:24 move.concurrency.auto.mni unknown field "mni"; known fields: min, max',
    ]);
    expect(problems(plan('{fixed: 4}'))).toEqual([
      '9:16 move.concurrency expected a whole number from 1 to 1000, auto, or {auto: {min: 2, max: 64}}: the mapping needs its auto key',
      '9:17 move.concurrency.fixed unknown field "fixed"; known fields: auto',
    ]);
  });

  it('gives each reader the number it needs', () => {
    const auto = { auto: { min: 2, max: 64 } };
    expect([concurrencyCeiling(auto), fixedConcurrency(auto), describeConcurrency(auto)]).toEqual([
      64,
      null,
      'auto (2 to 64)',
    ]);
    expect([concurrencyCeiling(8), fixedConcurrency(8), describeConcurrency(8)]).toEqual([8, 8, '8']);
  });
});
