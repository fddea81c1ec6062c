import { describe, expect, it } from 'vitest';
import { MACHINE_VERSION } from '../machine/machine.js';
import type { SavedRun } from '../store/types.js';
import { chooseStart } from './resume.js';
import type { StartOptions } from './resume.js';

const saved = (value: string, status = 'done'): SavedRun => ({
  planName: 'x',
  planHash: 'h',
  machineVersion: MACHINE_VERSION,
  snapshot: { status, value, context: { step: value, startedAt: 0 } },
});
const opts = (o: Partial<StartOptions> = {}): StartOptions => ({
  acceptPlanChange: false,
  dryRun: false,
  fixed: () => true,
  planChanges: () => [],
  ...o,
});

describe('chooseStart: what hooks hear as a resume', () => {
  it('is a resume after a failed run (exit 1 or 7), though the machine starts again from pre-flight', () => {
    const start = chooseStart(saved('failed'), 'h', opts());
    expect(start).toMatchObject({ kind: 'fresh', reason: 'resuming a failed run', resumes: true });
  });

  it('is a resume for a restored snapshot, released items and a run that ended with quarantined items', () => {
    expect(chooseStart(saved('drain', 'active'), 'h', opts()).resumes).toBe(true);
    expect(chooseStart(saved('drain', 'active'), 'h', opts({ released: 2 })).resumes).toBe(true);
    expect(chooseStart(saved('doneWithQuarantine'), 'h', opts()).resumes).toBe(true);
  });

  it('is no resume for a new checkpoint, an attempt that wrote nothing, or a rehearsal repeated', () => {
    expect(chooseStart(null, 'h', opts()).resumes ?? false).toBe(false);
    expect(chooseStart(saved('failed'), 'other', opts({ fixed: () => false })).resumes).toBe(false);
    expect(chooseStart(saved('done'), 'h', opts({ dryRun: true })).resumes).toBe(false);
  });
});
