import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { locateCheckpoint } from './paths.js';
import { shellWord } from '../shared/shell-word.js';

let root: string;
let plans: string;
let elsewhere: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'shardmove-paths-')));
  plans = join(root, 'ops plans');
  elsewhere = join(root, 'elsewhere');
  mkdirSync(plans);
  mkdirSync(elsewhere);
  writeFileSync(join(plans, 'x.yaml'), 'name: x\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const at = (cwd: string, planFile: string, more: Partial<Parameters<typeof locateCheckpoint>[0]> = {}) =>
  locateCheckpoint({ planFile, planName: 'x', role: 'run', cwd, ...more });

describe('locateCheckpoint: one checkpoint per plan file, from any directory', () => {
  it('is state/<name>.db beside the plan, whichever directory the command runs in and however the plan is named', () => {
    const want = join(plans, 'state', 'x.db');
    expect(at(plans, 'x.yaml').file).toBe(want);
    expect(at(elsewhere, join(plans, 'x.yaml')).file).toBe(want);
    expect(at(elsewhere, relative(elsewhere, join(plans, 'x.yaml'))).file).toBe(want);
    expect(at(root, 'ops plans/../ops plans/x.yaml').file).toBe(want);
    expect(at(elsewhere, join(plans, 'x.yaml'), { role: 'dry-run' }).file).toBe(join(plans, 'state', 'x.dry-run.db'));
    expect(at(elsewhere, join(plans, 'x.yaml'), { role: 'copy' }).file).toBe(join(plans, 'state', 'x.copy.db'));
  });

  it('follows a symlinked plan to the real file: two links to one plan find one checkpoint', () => {
    symlinkSync(join(plans, 'x.yaml'), join(elsewhere, 'link.yaml'));
    expect(at(elsewhere, 'link.yaml').file).toBe(join(plans, 'state', 'x.db'));
  });

  it("takes the plan's checkpoint field relative to the plan file, the dry run's named after it", () => {
    expect(at(elsewhere, join(plans, 'x.yaml'), { planCheckpoint: 'runs/a b.db' }).file).toBe(
      join(plans, 'runs', 'a b.db'),
    );
    expect(at(elsewhere, join(plans, 'x.yaml'), { planCheckpoint: 'runs/a.db', role: 'dry-run' }).file).toBe(
      join(plans, 'runs', 'a.dry-run.db'),
    );
    expect(at(elsewhere, join(plans, 'x.yaml'), { planCheckpoint: '/var/x.db' })).toEqual({
      file: '/var/x.db',
      from: 'plan',
    });
  });

  it('takes --state as typed, against the current directory, for every role', () => {
    expect(at(elsewhere, join(plans, 'x.yaml'), { statePath: 'my.db', planCheckpoint: 'a.db' })).toEqual({
      file: join(elsewhere, 'my.db'),
      from: 'state',
    });
    expect(at(elsewhere, join(plans, 'x.yaml'), { statePath: 'my.db', role: 'dry-run' }).file).toBe(
      join(elsewhere, 'my.db'),
    );
  });
});

describe('a checkpoint left where an older shardmove put it (state/ under the current directory)', () => {
  beforeEach(() => {
    mkdirSync(join(elsewhere, 'state'));
    for (const f of ['x.db', 'x.db-wal', 'x.log', 'x.dry-run.db', 'x.revert.db', 'x.copy.db', 'xy.db'])
      writeFileSync(join(elsewhere, 'state', f), '');
  });

  it('is never passed over silently: refused, naming both places and the commands that move it', () => {
    let message = '';
    try {
      at(elsewhere, join(plans, 'x.yaml'));
    } catch (err) {
      expect(err).toMatchObject({ code: 'SHARDMOVE_CHECKPOINT_ELSEWHERE' });
      message = (err as Error).message;
    }
    const q = (p: string) => shellWord(p);
    expect(message).toContain(`belongs beside the plan file, at\n  ${join(plans, 'state', 'x.db')}\n`);
    expect(message).toContain(`under the current directory:\n  ${join(elsewhere, 'state', 'x.db')}\n`);
    expect(message).toContain(
      `\n  shardmove status ${q(join(plans, 'x.yaml'))} --state ${join(elsewhere, 'state', 'x.db')}\n`,
    );
    expect(message).toContain(`  mkdir -p ${q(join(plans, 'state'))}\n`);
    // Its log, WAL, dry run's and revert's files go with it; another plan's and the copy's stay.
    for (const f of ['x.db', 'x.db-wal', 'x.log', 'x.dry-run.db', 'x.revert.db'])
      expect(message).toContain(`  mv -i ${join(elsewhere, 'state', f)} ${q(join(plans, 'state', f))}\n`);
    expect(message).not.toContain('x.copy.db');
    expect(message).not.toContain('xy.db');
    expect(message).toContain(`--state ${join(elsewhere, 'state', 'x.db')}`);
    // Nothing was created where the plan looks.
    expect(() => realpathSync(join(plans, 'state'))).toThrow();
  });

  it('maps every file to the name the plan field gives, and a copy moves its own files only', () => {
    expect(() => at(elsewhere, join(plans, 'x.yaml'), { planCheckpoint: 'runs/r.db' })).toThrow(
      `mv -i ${join(elsewhere, 'state', 'x.dry-run.db')} ${shellWord(join(plans, 'runs', 'r.dry-run.db'))}`,
    );
    mkdirSync(join(elsewhere, 'state', 'x.backup'));
    let message = '';
    try {
      at(elsewhere, join(plans, 'x.yaml'), { role: 'copy' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.match(/mv -i .*/g)).toEqual([
      `mv -i ${join(elsewhere, 'state', 'x.backup')} ${shellWord(join(plans, 'state', 'x.backup'))}`,
      `mv -i ${join(elsewhere, 'state', 'x.copy.db')} ${shellWord(join(plans, 'state', 'x.copy.db'))}`,
    ]);
  });

  it('is named, not refused, when the plan has its own checkpoint too; and is nothing when it is that same file', () => {
    mkdirSync(join(plans, 'state'));
    writeFileSync(join(plans, 'state', 'x.db'), '');
    expect(at(elsewhere, join(plans, 'x.yaml'))).toEqual({
      file: join(plans, 'state', 'x.db'),
      from: 'default',
      alsoAt: join(elsewhere, 'state', 'x.db'),
    });
    expect(at(elsewhere, join(elsewhere, 'x.yaml'))).toEqual({
      file: join(elsewhere, 'state', 'x.db'),
      from: 'default',
    });
  });

  it('is no concern with --state', () => {
    expect(at(elsewhere, join(plans, 'x.yaml'), { statePath: 'new.db' }).file).toBe(join(elsewhere, 'new.db'));
  });
});

describe('shellWord', () => {
  it.each([
    ['/srv/plans/state/x.db', '/srv/plans/state/x.db'],
    ['/srv/ops plans/x.db', "'/srv/ops plans/x.db'"],
    ["/srv/it's/x.db", "'/srv/it'\\''s/x.db'"],
    ['-rf', './-rf'],
    ["-it's", "'./-it'\\''s'"],
    ['/a/$(reboot)/x.db', "'/a/$(reboot)/x.db'"],
  ])('%s', (raw, quoted) => expect(shellWord(raw)).toBe(quoted));
});
