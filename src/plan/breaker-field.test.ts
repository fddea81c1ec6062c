import { describe, expect, it } from 'vitest';
import { PlanError } from './errors.js';
import { parsePlanText } from './load.js';
import { describeBreaker, formatBreaker, readBreakerText } from './breaker-field.js';

const ENV = { GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB', RATE: '5%' };

const MINIMAL = `version: 1
name: retire-nfs
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1, nfs-2]
  to: cluster
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

const breaker = (v: string) => `${MINIMAL}retry:\n  pause_after: ${v}\n`;

describe('retry.pause_after by rate', () => {
  it('reads the rate form beside the count form: a percentage or a share, min_moves 50 when left out', () => {
    expect(parse(breaker('{rate: 5%, within: 15m, min_moves: 50}')).plan.retry.pauseAfter).toEqual({
      rate: 0.05,
      withinMs: 900_000,
      minMoves: 50,
    });
    expect(parse(breaker('{rate: 0.5 %, within: 1h}')).plan.retry.pauseAfter).toEqual({
      rate: 0.005,
      withinMs: 3_600_000,
      minMoves: 50,
    });
    expect(parse(breaker('{rate: 0.1, within: 10m, min_moves: 20}')).plan.retry.pauseAfter).toMatchObject({
      rate: 0.1,
    });
    expect(parse(breaker('{rate: "${RATE}", within: 10m}')).plan.retry.pauseAfter).toMatchObject({ rate: 0.05 });
    // The count form is read and hashed as it always was.
    expect(parse(breaker('{failures: 20, within: 15m}')).plan.retry.pauseAfter).toEqual({
      failures: 20,
      withinMs: 900_000,
    });
  });

  it('refuses each bad rate form at its line:col, naming the field and what to write', () => {
    expect(problems(breaker('{rate: 5, within: 15m}'))).toEqual([
      '10:23 retry.pause_after.rate 5 is more than all of them: write 5% for 5 percent, or a share from 0 to 1',
    ]);
    expect(problems(breaker('{rate: 0%, within: 15m}'))).toEqual([
      expect.stringMatching(
        /^10:23 retry\.pause_after\.rate expected a share of the moves that ended, as a percentage above 0% and at most 100%/,
      ),
    ]);
    expect(problems(breaker('{rate: 120%, within: 15m}'))[0]).toMatch(
      /^10:23 retry\.pause_after\.rate expected a share/,
    );
    expect(problems(breaker('{rate: lots, within: 15m}'))[0]).toMatch(
      /^10:23 retry\.pause_after\.rate expected a share/,
    );
    expect(problems(breaker('{failures: 5, rate: 5%, within: 15m}'))).toEqual([
      '10:16 retry.pause_after give failures (a count) or rate (a share of the moves that ended), not both',
    ]);
    expect(problems(breaker('{failures: 5, within: 15m, min_moves: 10}'))).toEqual([
      '10:43 retry.pause_after.min_moves belongs to the rate form: write {rate: 5%, within: 15m, min_moves: 50}, or leave it out with failures',
    ]);
    expect(problems(breaker('{rate: 5%, within: 15m, min_moves: 0}'))).toEqual([
      '10:51 retry.pause_after.min_moves expected a whole number from 1 to 100000',
    ]);
    expect(problems(breaker('{rate: 5%}'))).toEqual([
      expect.stringMatching(/^10:16 retry\.pause_after\.within is required/),
    ]);
    expect(problems(breaker('{min_moves: 50, within: 15m}')).join('\n')).toMatch(
      /retry\.pause_after\.failures is required/,
    );
  });

  it("says the breaker in the plan's words and in plain words", () => {
    expect(formatBreaker({ rate: 0.05, withinMs: 900_000, minMoves: 50 })).toBe(
      '{rate: 5%, within: 15m, min_moves: 50}',
    );
    expect(formatBreaker({ failures: 20, withinMs: 900_000 })).toBe('{failures: 20, within: 15m}');
    expect(describeBreaker({ rate: 0.005, withinMs: 900_000, minMoves: 50 })).toBe(
      '0.5% of the moves that ended within 15m failing, once 50 have ended in it',
    );
  });

  it('reads a breaker written on a command line as the plan writes it, or says each problem', () => {
    expect(readBreakerText('{rate: 5%, within: 15m, min_moves: 50}')).toEqual({
      ok: true,
      breaker: { rate: 0.05, withinMs: 900_000, minMoves: 50 },
    });
    expect(readBreakerText('{failures: 20, within: 15m}')).toEqual({
      ok: true,
      breaker: { failures: 20, withinMs: 900_000 },
    });
    expect(readBreakerText('{rate: 5, within: 15m}')).toEqual({
      ok: false,
      problems: ['rate: 5 is more than all of them: write 5% for 5 percent, or a share from 0 to 1 (column 8)'],
    });
    expect(readBreakerText('{failures: 20, within: 15m, after: 1}')).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^after: unknown field "after"/)],
    });
    expect(readBreakerText('{rate: 5%')).toMatchObject({ ok: false });
    expect(readBreakerText('20')).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^breaker: expected a mapping/)],
    });
    // No variable is expanded from a command line.
    expect(readBreakerText('{rate: "${RATE}", within: 15m}')).toMatchObject({ ok: false });
  });
});
