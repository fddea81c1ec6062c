import { describe, expect, it } from 'vitest';
import { migrationSpan, withThisProcess } from './span.js';

const e = (at: number, type: string) =>
  ({ at, type }) as Parameters<typeof migrationSpan>[0] extends Iterable<infer T> ? T : never;

describe('the whole migration from its log', () => {
  it.each([
    ['nothing ran', [], null, { startedAt: null, wallMs: 0, activeMs: 0, processes: 0 }],
    [
      'one process that finished',
      [e(1000, 'run.started'), e(5000, 'move.finished'), e(9000, 'run.finished')],
      null,
      { startedAt: 1000, endedAt: 9000, wallMs: 8000, activeMs: 8000, processes: 1 },
    ],
    [
      'killed (no end event), resumed an hour later, then a resume that found it ended',
      [
        e(1000, 'run.started'),
        e(4000, 'move.finished'),
        e(3_604_000, 'run.started'),
        e(3_610_000, 'run.finished'),
        e(7_200_000, 'run.started'),
        e(7_200_500, 'run.finished'),
      ],
      null,
      { startedAt: 1000, endedAt: 7_200_500, wallMs: 7_199_500, activeMs: 3000 + 6000 + 500, processes: 3 },
    ],
    [
      'interrupted, then running now',
      [e(0, 'run.started'), e(2000, 'run.interrupted'), e(10_000, 'run.started'), e(11_000, 'poll')],
      10_000,
      { startedAt: 0, endedAt: 15_000, wallMs: 15_000, activeMs: 2000 + 5000, processes: 2 },
    ],
  ] as const)('%s', (_name, events, runningSince, want) => {
    expect(migrationSpan(events, 15_000, runningSince)).toMatchObject(want);
  });

  it('adds this process to what went before, never a new start', () => {
    const before = migrationSpan([e(1000, 'run.started'), e(9000, 'run.finished')], 20_000);
    expect(withThisProcess(before, 20_000, 31_000)).toEqual({
      startedAt: 1000,
      endedAt: 31_000,
      wallMs: 30_000,
      activeMs: 8000 + 11_000,
      processes: 2,
    });
    expect(withThisProcess(migrationSpan([], 5), 5, 7)).toMatchObject({ startedAt: 5, wallMs: 2, processes: 1 });
  });
});
