/**
 * The checkpoint's whole-file check in a worker thread (./precheck.ts): the verdict for the file
 * `run` will open, found as `run` finds it, with the words opening it would say.
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../store/checkpoint.js';
import { TSX_API_ENV, startPrecheck } from './precheck.js';

// As bin/shardmove does when it runs the sources: the worker registers tsx with this.
process.env[TSX_API_ENV] = import.meta.resolve('tsx/esm/api');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardmove-precheck-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function soundCheckpoint(file: string): void {
  const cp = openCheckpoint(file);
  cp.saveRun({ planName: 'p', planHash: 'h', machineVersion: 1, snapshot: {} });
  cp.batch(() => {
    for (let i = 0; i < 300; i++) cp.appendEvent('run.restart', { reason: 'x'.repeat(200) }, i);
  });
  cp.close();
}

/** One leaf page of the event log overwritten, the header and the length as they were. */
function overwritePage(file: string): void {
  const db = new Database(file, { fileMustExist: true });
  const leaves = db
    .prepare(`SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno`)
    .all() as { pageno: number }[];
  db.close();
  const page = leaves[Math.floor(leaves.length / 2)]!.pageno;
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.alloc(4096, 0x41), 0, 4096, (page - 1) * 4096);
  closeSync(fd);
}

describe('the checkpoint checked in a worker thread', () => {
  it('finds a sound checkpoint given with --state and says it was checked', async () => {
    const file = join(dir, 'run.db');
    soundCheckpoint(file);
    expect(await startPrecheck({ planFile: 'plan.yaml', statePath: 'run.db', dryRun: false, cwd: dir })).toEqual({
      file,
      checked: true,
    });
  });

  it('finds the checkpoint beside the plan by its name, as run does', async () => {
    writeFileSync(join(dir, 'plan.yaml'), 'version: 1\nname: retire-nfs\n');
    mkdirSync(join(dir, 'state'));
    soundCheckpoint(join(dir, 'state', 'retire-nfs.db'));
    expect(await startPrecheck({ planFile: 'plan.yaml', dryRun: false, cwd: dir })).toEqual({
      file: join(dir, 'state', 'retire-nfs.db'),
      checked: true,
    });
    expect(await startPrecheck({ planFile: 'plan.yaml', dryRun: true, cwd: dir })).toEqual({
      file: join(dir, 'state', 'retire-nfs.dry-run.db'),
      checked: false,
    });
  });

  it('says a page overwritten inside is damaged, in the words opening it says', async () => {
    const file = join(dir, 'run.db');
    soundCheckpoint(file);
    overwritePage(file);
    let opened: unknown;
    try {
      openCheckpoint(file).close();
    } catch (err) {
      opened = err;
    }
    const verdict = await startPrecheck({ planFile: 'plan.yaml', statePath: file, dryRun: false, cwd: dir });
    expect(verdict).toEqual({
      file,
      checked: true,
      problem: 'damaged',
      message: (opened as Error).message,
    });
  });

  it('has no verdict for a plan it cannot read plainly: the run checks for itself', async () => {
    writeFileSync(join(dir, 'plan.yaml'), 'version: 1\nname: [not, a, name]\n');
    expect(await startPrecheck({ planFile: 'plan.yaml', dryRun: false, cwd: dir })).toBeNull();
    expect(await startPrecheck({ planFile: 'missing.yaml', dryRun: false, cwd: dir })).toBeNull();
  });
});
