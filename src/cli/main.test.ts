import { describe, expect, it } from 'vitest';
import { CopyRefusedError } from '../copy/errors.js';
import { MetricsFileInUseError } from '../metrics/errors.js';
import { PlanError } from '../plan/errors.js';
import {
  CHECKPOINT_ELSEWHERE,
  CHECKPOINT_MODE,
  DRAIN_RUNNING,
  INSTANCE_CHANGED,
  ITEMS_FILE_INVALID,
  ITEMS_OTHER_LIST,
  ITEMS_OTHER_PLAN,
  MOVES_IN_FLIGHT,
  PLAN_CHANGED,
  RuntimeError,
} from '../runtime/errors.js';
import { StepError, WEIGHTS_CHANGED } from '../actors/index.js';
import { FOREIGN_MOVES } from '../actors/errors.js';
import { FaultOptionsError } from '../sandbox/faults.js';
import { SeedError } from '../sandbox/seed.js';
import { CheckpointBusyError, CheckpointUnusableError, LeaseLostError, LockedError } from '../store/errors.js';
import { InstanceOutageError } from '../api/errors.js';
import { EXIT } from './context.js';
import { ArgsError } from './errors.js';
import { EXIT_BY_CODE } from './main.js';

/** Every error whose code has its own exit code (README: Exit codes), built the way its module builds it. */
const MAPPED: [Error & { code: string }, number][] = [
  [new PlanError('plan.yaml', []), EXIT.invalid],
  [new ArgsError('bad option'), EXIT.invalid],
  [new SeedError(['seed.yaml:1:1: bad']), EXIT.invalid],
  [new FaultOptionsError('bad rate'), EXIT.invalid],
  [new LockedError('run.db', { pid: 1, host: 'h', startedAt: 0 }), EXIT.refused],
  [new RuntimeError(PLAN_CHANGED, 'plan changed'), EXIT.refused],
  [new RuntimeError(CHECKPOINT_MODE, 'holds a dry run'), EXIT.refused],
  [new RuntimeError(MOVES_IN_FLIGHT, 'moves in flight'), EXIT.refused],
  [new RuntimeError(INSTANCE_CHANGED, 'another instance'), EXIT.refused],
  [new StepError(WEIGHTS_CHANGED, 'weights changed since'), EXIT.refused],
  [new RuntimeError(CHECKPOINT_ELSEWHERE, 'left at the old default place'), EXIT.refused],
  [new RuntimeError(ITEMS_FILE_INVALID, 'list.jsonl:3: changed by hand'), EXIT.invalid],
  [new RuntimeError(ITEMS_OTHER_PLAN, 'made under another plan'), EXIT.refused],
  [new RuntimeError(ITEMS_OTHER_LIST, 'seeded from another list'), EXIT.refused],
  [new LeaseLostError('run.db', null), EXIT.leaseLost],
  [new CopyRefusedError('tar-empty-target', 'not empty'), EXIT.refused],
  [new MetricsFileInUseError('--metrics-file m.prom is kept by another run'), EXIT.refused],
  [new RuntimeError(DRAIN_RUNNING, 'another run drains nfs-1'), EXIT.refused],
  [new StepError(FOREIGN_MOVES, 'moves of another drain in flight'), EXIT.refused],
  [
    new CheckpointUnusableError(
      'run.db',
      'not-a-database',
      'run.db is not a shardmove checkpoint: file is not a database',
    ),
    EXIT.failed,
  ],
  [new CheckpointBusyError('run.db', null, 'checkpoint run.db is busy'), EXIT.refused],
  [new InstanceOutageError({ since: 0, cause: 'ECONNREFUSED', retryMs: 10_000, deadline: 1 }, 1_800_000), EXIT.outage],
];

describe('EXIT_BY_CODE', () => {
  it.each(MAPPED.map(([err, exit]) => [err.name, err, exit] as const))(
    'maps %s to its documented exit code',
    (_name, err, exit) => {
      expect(EXIT_BY_CODE[err.code]).toBe(exit);
    },
  );

  it('has no code that none of these errors carries', () => {
    expect(Object.keys(EXIT_BY_CODE).sort()).toEqual(MAPPED.map(([err]) => err.code).sort());
  });
});
