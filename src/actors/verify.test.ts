import { describe, expect, it } from 'vitest';
import { KINDS } from '../plan/types.js';
import { createHarness, range, testPlan } from '../../test/support/drain-harness.js';
import { runDrain } from './drain/run.js';
import { runVerify } from './verify.js';

describe('verify', () => {
  it('passes when only quarantined items are left on the source', async () => {
    const h = createHarness(testPlan({ retry: { maxAttempts: 2 } }));
    h.fake.addItems('projects', 'nfs-1', range(1, 10));
    h.fake.addItems('snippets', 'nfs-1', range(1, 3));
    h.fake.script('projects', 4, 'fail');
    for (const kind of KINDS) await runDrain(h.deps, { source: 'nfs-1', kind });
    const v = await runVerify(h.deps);
    expect(v.ok).toBe(true);
    expect(v.perKindAndSource).toContainEqual({
      kind: 'projects',
      source: 'nfs-1',
      listed: 1,
      quarantined: 1,
      unexpected: 0,
      unlistable: 0,
      unlisted: 0,
      by: 'listing',
    });
    expect(v.perKindAndSource).toHaveLength(3);
  });

  it('reports items still on the source that the drain did not quarantine', async () => {
    const h = createHarness();
    h.fake.addItems('groups', 'nfs-1', [1, 2]);
    const v = await runVerify(h.deps);
    expect(v.ok).toBe(false);
    expect(v.problems).toEqual(['groups 1 (groups/1) is still on nfs-1', 'groups 2 (groups/2) is still on nfs-1']);
  });

  it('fails loudly when the listing ignores the storage filter (non-admin token)', async () => {
    const h = createHarness(testPlan(), { ignoreFilter: true });
    h.fake.addItems('projects', 'cluster', [1, 2]);
    await expect(runVerify(h.deps)).rejects.toMatchObject({ code: 'SHARDMOVE_VERIFY_FILTER_IGNORED' });
  });
});
