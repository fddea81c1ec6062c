import { describe, expect, it } from 'vitest';
import { bulkForbiddenBy, routesMissHidden } from '../actors/drain/unreachable.js';
import type { Plan } from '../plan/types.js';
import { unreachableLines } from './unreachable-lines.js';

const drain = { moved: 9, quarantined: 0, remaining: 0, source: 'nfs-1', kind: 'projects' };

describe('hidden and pending-delete projects in the report', () => {
  it('say how they move, or why they stay and what to do', () => {
    const bulk = { ...drain, unreachable: { items: 2, by: 'bulk' as const, left: 0, release: '16.2.0' } };
    expect(unreachableLines({ 'nfs-1/projects': bulk }, false)).toEqual([
      '',
      'Hidden and pending-delete projects:',
      '  2 hidden/pending-delete projects move by the bulk move of nfs-1 on 16.2.0 (GitLab 16.2.0 answers 404 for them on every per-item move route)',
    ]);
    const held = {
      ...drain,
      unreachable: {
        items: 1,
        by: 'quarantine' as const,
        forbiddenBy: 'quarantine (3 other projects on nfs-1 would be moved again)',
        left: 1,
        release: '16.6.1',
      },
    };
    const lines = unreachableLines({ 'nfs-1/projects': held }, false);
    expect(lines[2]).toMatch(/^ {2}1 hidden\/pending-delete project stays on nfs-1, quarantined: GitLab 16\.6\.1/);
    expect(lines[3]).toMatch(
      /once the other quarantined projects of nfs-1 are moved or dealt with, run again with --retry-quarantined/,
    );
    expect(unreachableLines({ 'nfs-1/projects': drain }, false)).toEqual([]);
  });

  it('take the move routes to miss them before 16.7, and what of a plan forbids the bulk move', () => {
    for (const v of ['15.11.0', '16.2.0', '16.6.3']) expect(routesMissHidden(v), v).toBe(true);
    for (const v of ['16.7.0', '17.11.0', null, 'nonsense']) expect(routesMissHidden(v), String(v)).toBe(false);
    const plan = (move: Partial<Plan['move']>) => ({ move }) as unknown as Plan;
    expect(bulkForbiddenBy({ plan: plan({}) })).toBeNull();
    expect(bulkForbiddenBy({ plan: plan({ select: {} as never }) })).toBe('move.select');
    expect(bulkForbiddenBy({ plan: plan({ until: {} as never }) })).toBe('move.until');
    expect(bulkForbiddenBy({ plan: plan({}), itemsGiven: 'list' })).toBe('the reviewed list (run --only)');
  });
});
