/**
 * Reading a plan costs time linear in its size. Each test is a shape that used to cost time
 * quadratic in it (minutes for a plan under the 1 MB cap, or for the part's own input; the hostile
 * probe found them) and asserts what is reported; none measures time.
 */
import { describe, expect, it } from 'vitest';
import { LineCounter } from 'yaml';
import { PlanError } from './errors.js';
import { expandVars } from './expand.js';
import { parsePlanText, scanForTokens } from './load.js';
import { Reader } from './reader.js';
import { sourcesUnique } from './rules.js';
import type { Plan } from './types.js';
import { findTokenLike } from './secrets.js';
import { parseYaml } from '../shared/yaml-input.js';

function problems(text: string): string[] {
  try {
    parsePlanText(text, 'plan.yaml', { env: {}, baseDir: '/plans', readFile: () => undefined });
  } catch (err) {
    if (err instanceof PlanError) return err.problems.map((p) => `${p.line}:${p.col} ${p.path} ${p.message}`);
    throw err;
  }
  throw new Error('expected a PlanError');
}

describe('plan reading in linear time', () => {
  it('places each of 60,000 ${VAR} references of one scalar', () => {
    // Each reference was found by counting the ones before it, in the value and in the source.
    const got = problems(`version: 1\nname: "${'${X}'.repeat(60_000)}"\n`).filter((p) => p.includes(' name '));
    expect(got).toHaveLength(60_000);
    expect(got.slice(0, 2)).toEqual([
      '2:8 name environment variable X is not set',
      '2:12 name environment variable X is not set',
    ]);
    expect(got.at(-1)).toBe(`2:${8 + 4 * 59_999} name environment variable X is not set`);
  });

  it('places each of 60,000 unclosed ${ of one scalar', () => {
    const got = problems(`version: 1\nname: "${'${'.repeat(60_000)}"\n`).filter((p) => p.includes(' name '));
    expect(got).toHaveLength(60_000);
    expect(got.slice(0, 2).map((p) => p.split(' ')[0])).toEqual(['2:8', '2:10']);
    expect(got[0]).toBe('2:8 name malformed ${...}: write ${NAME} (letters, digits, _), or $${ for a literal ${');
  });

  it('reads 3,000,000 unclosed ${ in one pass', () => {
    // Each `${` looked for the next `}` up to the end of the text.
    const { malformed, value } = expandVars('${'.repeat(3_000_000), {});
    expect(malformed).toHaveLength(3_000_000);
    expect(malformed.slice(0, 3)).toEqual([0, 2, 4]);
    expect(value).toHaveLength(6_000_000);
  });

  it('names the field of each of 20,000 token-looking values among 200,000 items', () => {
    // Each token's field was found by walking every item before it.
    const items = Array.from(
      { length: 20_000 },
      (_, i) => `${'a, '.repeat(9)}glpat-Zx8Kd2mQpL0vZ7rT${String(i).padStart(5, '0')}`,
    );
    const text = `move:\n  from: [${items.join(', ')}]\n`;
    const lineCounter = new LineCounter();
    const r = new Reader('plan.yaml', text, lineCounter, {}, '/plans', () => undefined, false);
    scanForTokens(r, text, parseYaml(text, { lineCounter }).doc!);
    expect(r.errors).toHaveLength(20_000);
    expect(r.errors.slice(0, 2).map((e) => e.path)).toEqual(['move.from[9]', 'move.from[19]']);
    expect(r.errors.at(-1)?.path).toBe('move.from[199999]');
  });

  it('names a long key once in the paths of the token-looking texts in it or under it', () => {
    // Each path held the whole key, and each was scanned again for tokens: out of memory after 37 s.
    const long = 'x'.repeat(600_000);
    const under = problems(`version: 1\n? ${long}\n: [${'glpat-Zx8Kd2mQpL0vZ7rT4yWnB, '.repeat(11_000)}]\n`).filter(
      (p) => p.includes('access token'),
    );
    expect(under).toHaveLength(11_000);
    expect(under[1]).toBe(
      `3:33 ${'x'.repeat(97)}...[1] text that looks like an access token: secrets come from the environment (\${VAR}) or a file (*_file), never the plan text`,
    );
    const inside = problems(`version: 1\n? ${'glpat-Zx8Kd2mQpL0vZ7rT4yWnB '.repeat(35_000)}\n: 1\n`).filter((p) =>
      p.includes('access token'),
    );
    expect(inside).toHaveLength(35_000);
    expect(inside.every((p) => p.startsWith('2:') && p.split(' ')[1] === '***')).toBe(true);
  });

  it('finds each of 300,000 tokens once', () => {
    // Each match of the custom-prefix pattern was compared with every known-prefix match.
    const text = Array.from({ length: 300_000 }, (_, i) => `glpat-Zx8Kd2mQpL0vZ7rT${String(i).padStart(6, '0')}`).join(
      ' ',
    );
    const spans = findTokenLike(text);
    expect(spans).toHaveLength(300_000);
    expect(spans[1]).toEqual({ start: 29, end: 57 });
  });

  it('checks 200,000 sources for repeats', () => {
    // Each source was looked up from the start of the list.
    const from = Array.from({ length: 200_000 }, (_, i) => `s${i}`);
    const check = (list: string[]) =>
      sourcesUnique.check({
        plan: { move: { from: list } } as Plan,
        planWeights: {},
        at: () => ({ line: 1, col: 1 }),
        valid: () => true,
      });
    expect(check(from)).toEqual([]);
    expect(check([...from, 's7'])).toEqual([
      { path: 'move.from[200000]', message: '"s7" is already listed as move.from[7]', severity: 'error' },
    ]);
  });
});
