import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PlanError } from './errors.js';
import { hashPlan } from './hash.js';
import { parsePlanText, readPlanHead } from './load.js';

const ENV = { GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB', DIR: '/srv' };

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

describe('checkpoint: where the plan keeps its checkpoint', () => {
  it('is absent unless written, and kept as written (the command resolves it against the plan file)', () => {
    expect(parse(MINIMAL).plan.checkpoint).toBeUndefined();
    expect(parse(`${MINIMAL}checkpoint: runs/retire nfs.db\n`).plan.checkpoint).toBe('runs/retire nfs.db');
    expect(parse(`${MINIMAL}checkpoint: /var/lib/shardmove/x.db\n`).plan.checkpoint).toBe('/var/lib/shardmove/x.db');
  });

  it('is no change of plan: the hash is the same with it, without it, and wherever it points', () => {
    const base = hashPlan(parse(MINIMAL).plan);
    expect(hashPlan(parse(`${MINIMAL}checkpoint: a.db\n`).plan)).toBe(base);
    expect(hashPlan(parse(`${MINIMAL}checkpoint: /elsewhere/b.db\n`).plan)).toBe(base);
  });

  it.each([
    ['checkpoint: ${DIR}/x.db', 'a literal path: ${VAR} is not expanded here'],
    ['checkpoint: ~/x.db', '~ is not expanded here'],
    ['checkpoint: runs/x.sqlite', 'a file name ending in .db'],
    ['checkpoint: runs/', 'a file name ending in .db'],
    ['checkpoint: runs/.db', 'a file name ending in .db'],
    ['checkpoint: ""', 'a file name ending in .db'],
    ['checkpoint: x.dry-run.db', 'ends like the name shardmove gives a dry run'],
    ['checkpoint: x.revert.db', 'ends like the name shardmove gives a dry run'],
    ['checkpoint: "a\\tb.db"', 'without control characters'],
    ['checkpoint: 5', 'expected a string'],
    ['checkpoint: [x.db]', 'expected a string'],
  ])('refuses %s at its line:col', (line, message) => {
    const got = problems(`${MINIMAL}${line}\n`);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatch(/^9:13 checkpoint /);
    expect(got[0]).toContain(message);
  });
});

describe('readPlanHead (status and control when the plan does not load)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-head-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the name and the checkpoint as written, whatever else is wrong', async () => {
    writeFileSync(join(dir, 'p.yaml'), 'version: 1\nname: x\ncheckpoint: runs/x.db\ninstance:\n  url: ${UNSET}\n');
    expect(await readPlanHead('p.yaml', dir)).toEqual({ name: 'x', checkpoint: 'runs/x.db' });
    writeFileSync(join(dir, 'q.yaml'), 'name: x\ncheckpoint:\n');
    expect(await readPlanHead('q.yaml', dir)).toEqual({ name: 'x', checkpoint: undefined });
    writeFileSync(join(dir, 'r.yaml'), 'name: x\ncheckpoint: {a: 1}\n');
    expect((await readPlanHead('r.yaml', dir))?.checkpoint).toBeTypeOf('object');
  });
});
