/**
 * The checkpoint's whole-file check in a worker thread (./precheck.ts): the verdict for the file
 * `run` will open, found as `run` finds it, with the words opening it would say.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../store/checkpoint.js';
import { TSX_API_ENV, startPrecheck } from './precheck.js';
import { checkpointWithEvents, overwriteEventPage } from '../../../test/support/damaged-checkpoint.js';

// As bin/shardmove does when it runs the sources: the worker registers tsx with this.
process.env[TSX_API_ENV] = import.meta.resolve('tsx/esm/api');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardmove-precheck-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the checkpoint checked in a worker thread', () => {
  it('finds a sound checkpoint given with --state and says it was checked', async () => {
    const file = join(dir, 'run.db');
    checkpointWithEvents(file);
    expect(await startPrecheck({ planFile: 'plan.yaml', statePath: 'run.db', dryRun: false, cwd: dir })).toEqual({
      file,
      checked: true,
    });
  });

  it('finds the checkpoint beside the plan by its name, as run does', async () => {
    writeFileSync(join(dir, 'plan.yaml'), 'version: 1\nname: retire-nfs\n');
    mkdirSync(join(dir, 'state'));
    checkpointWithEvents(join(dir, 'state', 'retire-nfs.db'));
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
    checkpointWithEvents(file);
    overwriteEventPage(file);
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
