import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PlanError } from './errors.js';
import { hashPlan } from './hash.js';
import { parsePlanText } from './load.js';
import { parseSelectLines } from './select-field.js';

const ENV = { GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB' };
const dir = mkdtempSync(join(tmpdir(), 'shardmove-select-field-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const plan = (select: string, mode = '') => `version: 1
name: pilot
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1]
  to: cluster${mode}
  select:
${select}
`;

function parse(text: string) {
  return parsePlanText(text, 'plan.yaml', { env: ENV, baseDir: dir, readFile: () => undefined });
}

function problems(text: string): string[] {
  try {
    parse(text);
  } catch (err) {
    expect(err).toBeInstanceOf(PlanError);
    return (err as PlanError).problems.map((p) => `${p.line}:${p.col} ${p.path} ${p.message}`);
  }
  throw new Error('expected a PlanError');
}

describe('move.select', () => {
  it('reads namespaces, ids and paths with where each is written, and a file of lines', () => {
    writeFileSync(join(dir, 'pilot.txt'), '# pilot\r\n\r\n  acme/web  \r\n4711\r\n');
    const { plan: p } = parse(
      plan(
        '    namespaces: [acme, "legal/holdings"]\n    projects: [12, "34", tools/ci]\n    exclude: [acme/old]\n    file: pilot.txt',
      ),
    );
    expect(p.move.select).toEqual({
      namespaces: [
        { ref: 'acme', at: 'plan.yaml:10:18' },
        { ref: 'legal/holdings', at: 'plan.yaml:10:24' },
      ],
      projects: [
        { ref: 12, at: 'plan.yaml:11:16' },
        { ref: 34, at: 'plan.yaml:11:20' },
        { ref: 'tools/ci', at: 'plan.yaml:11:26' },
      ],
      exclude: [{ ref: 'acme/old', at: 'plan.yaml:12:15' }],
      file: {
        path: join(dir, 'pilot.txt'),
        entries: [
          { ref: 'acme/web', at: 'pilot.txt:3' },
          { ref: 4711, at: 'pilot.txt:4' },
        ],
      },
    });
  });

  it('hashes the names, not where they are written or where the file is', () => {
    writeFileSync(join(dir, 'a.txt'), '5\n');
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'sub', 'b.txt'), '\n# moved\n5\n');
    const a = hashPlan(parse(plan('    namespaces: [acme]\n    file: a.txt')).plan);
    const b = hashPlan(parse(plan('    namespaces:\n      - acme\n    file: sub/b.txt')).plan);
    const c = hashPlan(parse(plan('    namespaces: [acme, other]\n    file: a.txt')).plan);
    expect(b).toBe(a);
    expect(c).not.toBe(a);
  });

  it('refuses every malformed entry at once, each at its line:col', () => {
    writeFileSync(join(dir, 'bad.txt'), 'ok/one\nbad path\n7\n07\n');
    expect(
      problems(
        plan(
          '    namespaces: [12, "", "/abs", acme]\n    projects: [0, 1.5, 99999999999999999999, acme, a//b, acme/x, acme/X]\n    exclude: [acme]\n    file: bad.txt',
        ),
      ),
    ).toEqual([
      '10:18 move.select.namespaces[0] a namespace is named by its full path (acme, acme/team), not by an id; a group whose path is all digits is written in quotes ("12")',
      '10:22 move.select.namespaces[1] an empty path',
      '10:26 move.select.namespaces[2] a full path neither starts nor ends with "/"',
      '11:16 move.select.projects[0] an id is a whole number from 1 to 9007199254740991',
      '11:19 move.select.projects[1] an id is a whole number from 1 to 9007199254740991',
      '11:24 move.select.projects[2] an id is a whole number from 1 to 9007199254740991',
      "11:46 move.select.projects[3] a project's full path has its namespace (acme/acme); a namespace goes under move.select.namespaces",
      '11:52 move.select.projects[4] a full path has no empty part ("//")',
      '11:66 move.select.projects[6] "acme/X" is listed twice (first at plan.yaml:11:58)',
      '13:11 move.select.file bad.txt:2: a full path has no spaces or control characters',
      '13:11 move.select.file bad.txt:4: 7 is listed twice (first on line 3)',
    ]);
  });

  it('refuses a name both selected and excluded, an empty selection, and a selection with bulk mode', () => {
    expect(problems(plan('    namespaces: [acme]\n    exclude: [ACME]'))).toEqual([
      '11:15 move.select.exclude[0] "ACME" is both selected (plan.yaml:10:18) and excluded',
    ]);
    expect(problems(plan('    {}'))).toEqual([
      '10:5 move.select name what moves: namespaces, projects or file, and/or what does not: exclude',
    ]);
    expect(problems(plan('    projects: []'))).toEqual([
      '10:15 move.select.projects list at least one, or leave the key out',
    ]);
    expect(problems(plan('    namespaces: [acme]', '\n  mode: bulk'))).toEqual([
      '11:5 move.select bulk mode moves everything on a source: choosing what moves needs mode: throttled',
    ]);
  });

  it('refuses a select file that is missing, a directory, not UTF-8, or names nothing', () => {
    mkdirSync(join(dir, 'adir'), { recursive: true });
    writeFileSync(join(dir, 'latin1.txt'), Buffer.from([0x61, 0x2f, 0xe9, 0x0a]));
    writeFileSync(join(dir, 'blank.txt'), '# only a comment\n\n');
    for (const [file, message] of [
      ['missing.txt', 'missing.txt: no such file'],
      ['adir', 'adir: a directory, not a file'],
      ['latin1.txt', 'latin1.txt: not UTF-8 text'],
      ['blank.txt', 'blank.txt names nothing (only blank lines and # comments): name at least one id or path'],
    ])
      expect(problems(plan(`    file: ${file}`))).toEqual([`10:11 move.select.file ${message}`]);
  });

  it('reads select lines with CRLF, spaces and comments, and keeps unicode for the instance to judge', () => {
    expect(parseSelectLines('grüppe/ünïcode\r\n  # a comment too\nacme/my repo\n', 'f')).toEqual({
      entries: [{ ref: 'grüppe/ünïcode', at: 'f:1' }],
      problems: ['f:3: a full path has no spaces or control characters'],
    });
  });

  it('reads the line ends of every saver (CR CR LF, a lone CR) and a BOM, each line numbered as an editor shows it', () => {
    const text = '\uFEFF# pilot\r\r\nacme/web\r\r\n42\racme/web\r\n';
    expect(parseSelectLines(text, 'f')).toEqual({
      entries: [
        { ref: 'acme/web', at: 'f:2' },
        { ref: 42, at: 'f:3' },
      ],
      problems: ['f:4: "acme/web" is listed twice (first on line 2)'],
    });
  });
});
