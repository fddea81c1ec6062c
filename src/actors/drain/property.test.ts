/**
 * Property test: for any mix of move outcomes, ambiguous POSTs, foreign moves, crash points and
 * either mode, a drain resumed until it returns ends with every item moved or quarantined, and the
 * fake instance saw no second move in flight for an item and no move onto an item's own storage.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CodedError } from '../../../test/support/coded-error.js';
import { createHarness, resumed, testPlan } from '../../../test/support/drain-harness.js';
import type { MoveScript } from '../../../test/support/fake-instance.js';
import { runDrain } from './run.js';
import { assertProperty } from '../../../test/support/property.js';

const script = fc.constantFrom<MoveScript>('ok', 'ok', 'ok', 'fail', 'cleanup-fail', 'stuck', 'finished-not-moved');
const item = fc.record({
  steps: fc.array(script, { minLength: 1, maxLength: 3 }),
  ambiguous: fc.constantFrom('no', 'no', 'applied', 'lost'),
  foreign: fc.boolean(),
});

describe('drain under arbitrary faults and crashes', () => {
  it('keeps the invariants and ends with nothing left but quarantined items', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.array(item, { minLength: 1, maxLength: 12 }),
        fc.constantFrom('throttled' as const, 'bulk' as const),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 3 }),
        async (items, mode, concurrency, crashes) => {
          const h = createHarness(
            // Moves of 11 s, polls 10 s apart: POSTs after the first happen on stale listings, which
            // must be refreshed. (The moves' length makes them stale, not the poll: the first moves of
            // a kind the model cannot predict yet are looked at from poll.min_interval on.)
            testPlan({
              move: { mode, concurrency },
              retry: { maxAttempts: 3, backoffMs: 10_000 },
              poll: { intervalMs: 10_000, stuckRunningAfterMs: 120_000 },
            }),
            { startDelayMs: 1000, durationMs: 10_000 },
          );
          items.forEach((it, i) => {
            const id = i + 1;
            h.fake.addItems('snippets', 'nfs-1', [id]);
            h.fake.script('snippets', id, ...it.steps);
            if (it.ambiguous === 'applied') h.fake.ambiguousApplied.add(`snippets:${id}`);
            if (it.ambiguous === 'lost') h.fake.ambiguousLost.add(`snippets:${id}`);
          });
          items.forEach((it, i) => {
            if (it.foreign) h.fake.startForeignMove('snippets', i + 1, 'cluster');
          });
          let run = h;
          for (const at of crashes) {
            let n = 0;
            h.fake.onRequest = () => {
              if (++n >= at) throw new CodedError('TEST_CRASH', 'killed');
            };
            await runDrain(run.deps, { source: 'nfs-1', kind: 'snippets' }).catch(() => undefined);
            h.fake.onRequest = null;
            run = resumed(run);
          }
          const r = await runDrain(run.deps, { source: 'nfs-1', kind: 'snippets' });
          expect(h.fake.violations).toEqual([]);
          expect(r.remaining).toBe(0);
          expect(r.moved + r.quarantined).toBe(items.length);
          for (let id = 1; id <= items.length; id++) {
            const row = h.store.getItem('snippets', id);
            const onSource = h.fake.item('snippets', id)!.storage === 'nfs-1';
            // Whatever is still on the source is quarantined; whatever the run calls moved is not there.
            if (onSource) expect(row?.state).toBe('quarantined');
            if (row?.state === 'moved') expect(onSource).toBe(false);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
