/**
 * The torture's small configuration (test/support/torture-run.ts, the same code as `npm run torture`):
 * a few dozen items, about ten SIGKILLs of the run, one sandbox kill and restart on its --db,
 * commits all along; the invariants are judged from the sandbox's own records.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { moveViolations } from './support/torture-check.js';
import { SMALL, runTorture } from './support/torture-run.js';

describe('torture (small configuration)', () => {
  it(
    'survives SIGKILLs of the run and a sandbox restart: nothing lost, no duplicate move, commits kept, verified',
    { timeout: 90_000 },
    async () => {
      const r = await runTorture(SMALL);
      onTestFinished(() => {
        if (r.failures.length === 0) rmSync(r.dir, { recursive: true, force: true });
      });
      expect(r.failures).toEqual([]);
      expect(r.orchestratorKills).toBe(SMALL.kills);
      expect(r.sandboxKills.SIGKILL + r.sandboxKills.SIGTERM).toBe(SMALL.sandboxRestarts);
      expect(r.verdict.items).toBe(SMALL.projects + SMALL.snippets + SMALL.groups);
      expect(r.verdict.onDestination + r.verdict.quarantined.length).toBe(r.verdict.items);
      expect(r.verdict.duplicates).toEqual([]);
      expect(r.verdict.lost).toEqual([]);
      expect(r.verdict.commitsLost).toEqual([]);
      expect(r.commits.accepted).toBeGreaterThan(0);
      expect([0, 3]).toContain(r.finalRun.code);
      expect(r.finalRun.verified).toBe(true);
      // The broken items cannot move: they end quarantined with GitLab's error message.
      expect(r.verdict.quarantined.length).toBeGreaterThanOrEqual(SMALL.brokenItems);
      expect(r.verdict.quarantined.every((q) => q.reason.length > 0)).toBe(true);
      // Faults were really injected.
      expect(r.verdict.fates.fail ?? 0).toBeGreaterThan(0);
      expect((r.requestFaults.error ?? 0) + (r.requestFaults.reset ?? 0)).toBeGreaterThan(0);
    },
  );
});

describe('torture verdict: move intervals', () => {
  const move = (id: number, itemId: number, state: string, created: number, updated: number, source = 'nfs-1') => ({
    id,
    kind: 'project' as const,
    item_id: itemId,
    state,
    source,
    fate: 'ok',
    created_at: new Date(created).toISOString(),
    updated_at: new Date(updated).toISOString(),
  });

  it('accepts a retry after a failed move and flags a move created while another was in flight', () => {
    expect(moveViolations([move(1, 5, 'failed', 0, 100), move(2, 5, 'finished', 200, 300)], 'cluster')).toEqual({
      duplicates: [],
      onDestination: [],
    });
    const overlap = moveViolations([move(1, 5, 'failed', 0, 300), move(2, 5, 'finished', 200, 400)], 'cluster');
    expect(overlap.duplicates).toHaveLength(1);
  });

  it('treats a move never terminal (stuck) as in flight forever, and flags moves from the destination', () => {
    const stuck = moveViolations(
      [move(1, 5, 'started', 0, 0), move(2, 5, 'finished', 1_000_000, 1_000_100)],
      'cluster',
    );
    expect(stuck.duplicates).toHaveLength(1);
    const onDest = moveViolations([move(3, 6, 'finished', 0, 10, 'cluster')], 'cluster');
    expect(onDest.onDestination).toHaveLength(1);
  });
});
