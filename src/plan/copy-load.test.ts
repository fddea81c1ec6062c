import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCopyPlan, parseCopyPlanText, isCopyPlanText } from './copy-load.js';
import { PlanError } from './errors.js';
import { parsePlanText } from './load.js';

const ISSUE_EXAMPLE = `version: 1
name: to-new-dc
copy:
  method: rsync            # rsync | tar | backup
  source: { path: /var/opt/gitlab/git-data/repositories }
  target: { path: /mnt/new/repositories, host: git@new-gitaly-1, clustered: false }
`;

function problems(text: string): string[] {
  try {
    parseCopyPlanText(text, 'c.yaml', { env: {} });
  } catch (err) {
    if (err instanceof PlanError)
      return err.problems.map((p) => `${p.line}:${p.col} ${p.path}: ${p.message}${p.rule ? ` [${p.rule}]` : ''}`);
    throw err;
  }
  return [];
}

describe('copy plans', () => {
  it("load the issue's example", () => {
    const { plan } = parseCopyPlanText(ISSUE_EXAMPLE, 'c.yaml', { env: {} });
    expect(plan.copy).toEqual({
      method: 'rsync',
      source: { path: '/var/opt/gitlab/git-data/repositories' },
      target: { path: '/mnt/new/repositories', host: 'git@new-gitaly-1', clustered: false },
      backupPath: null,
    });
    expect(isCopyPlanText(ISSUE_EXAMPLE)).toBe(true);
  });

  it('normalise a trailing slash or /. away (rsync adds its own /.)', () => {
    const { plan } = parseCopyPlanText(ISSUE_EXAMPLE.replace('repositories }', 'repositories/. }'), 'c.yaml', {
      env: {},
    });
    expect(plan.copy.source.path).toBe('/var/opt/gitlab/git-data/repositories');
  });

  it('report each problem at its line:col', () => {
    const text = `version: 1
name: x
copy:
  method: scp
  source: { path: relative/dir }
  target: { path: /t, host: "-oProxyCommand=evil", clustred: true }
`;
    expect(problems(text)).toEqual([
      '4:11 copy.method: "scp" is not one of backup, tar, rsync',
      '5:19 copy.source.path: expected an absolute path (starting with /)',
      '6:29 copy.target.host: expected [user@]host for ssh (letters, digits, ".", "_", "-"; neither part begins with "-"); ssh options belong in your ssh configuration',
      '6:52 copy.target.clustred: unknown field "clustred" (did you mean "clustered"?)',
    ]);
  });

  it('refuse a host whose user part begins with "-" (ssh would read it as an option)', () => {
    const text = (host: string) =>
      `version: 1\nname: x\ncopy:\n  method: rsync\n  source: { path: /a }\n  target: { path: /t, host: "${host}" }\n`;
    for (const host of ['-Fevilcfg@x', '-oProxyCommand=y@x', '--@x', 'git@-x'])
      expect(problems(text(host)), host).toEqual([
        expect.stringMatching(/^6:29 copy\.target\.host: expected \[user@\]host/),
      ]);
    for (const host of ['git@new-gitaly-1', '_svc@h.example.com', 'h']) expect(problems(text(host)), host).toEqual([]);
  });

  it("refuse shell metacharacters and control characters in every path, at the path's line:col", () => {
    const plan = (p: string) =>
      `version: 1\nname: x\ncopy:\n  method: backup\n  source: { path: /a }\n  target: { path: ${JSON.stringify(p)}, host: h }\n  backup: { path: /b }\n`;
    // The probe's target first: on an old rsync, the backtick ran on the target's shell.
    expect(problems(plan('/srv/rt`touch$IFS/tmp/x`'))).toEqual([
      '6:19 copy.target.path: "`" is refused in a path: use letters, digits, spaces and / . _ - + , @ % : = only (no shell metacharacters or control characters)',
    ]);
    for (const c of [
      '`',
      '$',
      ';',
      '|',
      '&',
      '<',
      '>',
      '(',
      ')',
      '{',
      '}',
      '[',
      ']',
      '*',
      '?',
      '!',
      '#',
      '~',
      '^',
      "'",
      '"',
      '\\',
      '\n',
      '\t',
      '\r',
      '\u0000',
      '\u001b',
      '\u007f',
      '\u0085',
    ]) {
      expect(problems(plan(`/srv/a${c}b`)), JSON.stringify(c)).toEqual([
        expect.stringMatching(/^6:19 copy\.target\.path: (".+"|U\+00[0-9A-F]{2}) is refused in a path/),
      ]);
    }
    expect(problems(plan('/srv/a\nb'))).toEqual([expect.stringContaining('U+000A is refused')]);
    expect(problems(plan('/t').replace('path: /a', 'path: "/a;b"').replace('path: /b', 'path: "/b$c"'))).toEqual([
      expect.stringMatching(/^5:19 copy\.source\.path: ";" is refused/),
      expect.stringMatching(/^7:19 copy\.backup\.path: "\$" is refused/),
    ]);
    // Spaces, other scripts and a component beginning with "-" are fine: every command quotes them or gets them as one argument.
    for (const ok of ['/srv/my repos', '/srv/répos/ü', '/srv/-rf', '/srv/a+b,c@d%e:f=g'])
      expect(problems(plan(ok)), ok).toEqual([]);
  });

  it('refuse a path that is not absolute, so none begins with "-" (it would be an option to rsync, tar or find)', () => {
    for (const p of ['-rf', '--delete', 'srv/x', '~/x']) {
      expect(
        problems(`version: 1\nname: x\ncopy:\n  method: tar\n  source: { path: /a }\n  target: { path: "${p}" }\n`),
        p,
      ).toEqual([expect.stringMatching(/^6:19 copy\.target\.path: expected an absolute path/)]);
    }
  });

  it('name the rules a plan alone breaks', () => {
    const base = `version: 1\nname: x\ncopy:\n  method: tar\n  source: { path: /a/b }\n`;
    expect(problems(`${base}  target: { path: /a/b/c }\n`)).toEqual([
      expect.stringContaining('[source-target-overlap]'),
    ]);
    expect(problems(`${base}  target: { path: /a }\n`)).toEqual([expect.stringContaining('[source-target-overlap]')]);
    // On another host the same path is another directory.
    expect(problems(`${base}  target: { path: /a/b, host: other }\n`)).toEqual([]);
    expect(problems(`${base}  target: { path: /c, clustered: true }\n`)).toEqual([
      expect.stringMatching(/^4:11 copy\.method: .*\[clustered-target-backup-only\]$/),
    ]);
    expect(problems(`${base}  target: { path: /c }\n  backup: { path: /d }\n`)).toEqual([
      expect.stringContaining('[backup-path-backup-only]'),
    ]);
  });

  it('nested deeper than 32 levels are refused at once, with the position', () => {
    const text = `version: 1\nname: x\ncopy: ${'['.repeat(999_000)}`;
    expect(problems(text)).toEqual([
      '3:38 : YAML nested deeper than 32 levels (mappings and lists inside each other); a plan needs 3',
    ]);
    expect(isCopyPlanText(text)).toBe(false);
  });

  it('refuse a "billion laughs" without expanding it', () => {
    const lol = ['lol: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (const [prev, name] of ['ab', 'bc', 'cd', 'de', 'ef', 'fg', 'gh', 'hi'])
      lol.push(`${name}${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    const text = `x:\n${lol.map((l) => `  ${l}\n`).join('')}${ISSUE_EXAMPLE.replace('method: rsync            # rsync | tar | backup', 'method: *i')}`;
    expect(problems(text)).toEqual([
      '1:1 x: unknown field "x"; known fields: version, name, copy',
      '14:11 copy.method: aliases (*name) are not supported in plans; write the value out',
    ]);
  });

  it('with bytes that are not UTF-8 are refused at the first one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardmove-copy-'));
    try {
      const text = ISSUE_EXAMPLE.replace('/mnt/new/repositories', '/mnt/neu-\u0000');
      const [before, after] = text.split('\u0000') as [string, string];
      writeFileSync(
        join(dir, 'c.yaml'),
        Buffer.concat([Buffer.from(before), Buffer.from([0xfc]), Buffer.from(`r${after}`)]),
      );
      await expect(loadCopyPlan('c.yaml', { env: {}, cwd: dir })).rejects.toMatchObject({
        problems: [
          {
            file: 'c.yaml',
            line: 6,
            col: 28,
            message: `not UTF-8 (byte 0xfc at offset ${Buffer.byteLength(before)}); save the plan as UTF-8`,
          },
        ],
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('are refused by the move-plan loader with a pointer to `shardmove copy`', () => {
    expect(() => parsePlanText(ISSUE_EXAMPLE, 'c.yaml', { env: {} })).toThrow(
      /3:1: copy: this is a copy plan: run it with `shardmove copy PLAN`/,
    );
  });
});
