import { describe, expect, it } from 'vitest';
import type { StatusSummary } from '../store/types.js';
import { countItems, listOutcome, listWords, partialOutcome, stayingWords } from './counts.js';

/** A partial drain of nfs-1 (bound reached) beside a whole drain of nfs-2, mid-run. */
const summary: StatusSummary = {
  counts: [
    { kind: 'projects', source: 'nfs-1', state: 'moved', n: 20 },
    { kind: 'projects', source: 'nfs-1', state: 'in_flight', n: 4 },
    { kind: 'projects', source: 'nfs-1', state: 'pending', n: 110 },
    { kind: 'projects', source: 'nfs-1', state: 'quarantined', n: 1 },
    { kind: 'snippets', source: 'nfs-1', state: 'pending', n: 19 },
    { kind: 'projects', source: 'nfs-2', state: 'pending', n: 30 },
    { kind: 'projects', source: 'nfs-2', state: 'left', n: 2 },
  ],
  quarantined: [],
  movedLast10Min: 30,
  total: 186,
  stuck: [],
  // Two of nfs-1's pending projects wait for a retry: placed, so they still move.
  retrying: [{ kind: 'projects', source: 'nfs-1', n: 2 }],
  boundsReached: ['nfs-1'],
  staying: [
    { kind: 'projects', source: 'nfs-1', n: 108 },
    { kind: 'snippets', source: 'nfs-1', n: 19 },
  ],
};

describe('the one count', () => {
  it('puts every item in exactly one of done, in flight, waiting, quarantined and staying', () => {
    const c = countItems(summary);
    expect(c).toMatchObject({
      total: 186,
      done: 22,
      inFlight: 4,
      waiting: 2 + 30,
      quarantined: 1,
      staying: 127,
      planned: 186 - 127,
      remaining: 36,
      boundsReached: ['nfs-1'],
    });
    for (const p of [...c.kinds, ...c.sources])
      expect(p.done + p.inFlight + p.waiting + p.quarantined + p.staying + p.skipped, `${p.kind}`).toBe(p.total);
    expect(c.kinds).toEqual([
      {
        kind: 'projects',
        total: 167,
        done: 22,
        inFlight: 4,
        waiting: 32,
        retrying: 2,
        quarantined: 1,
        staying: 108,
        notSelected: 0,
        skipped: 0,
      },
      {
        kind: 'snippets',
        total: 19,
        done: 0,
        inFlight: 0,
        waiting: 0,
        retrying: 0,
        quarantined: 0,
        staying: 19,
        notSelected: 0,
        skipped: 0,
      },
    ]);
    expect(c.sources.map((s) => [s.kind, s.source, s.staying])).toEqual([
      ['projects', 'nfs-1', 108],
      ['snippets', 'nfs-1', 19],
      ['projects', 'nfs-2', 0],
    ]);
  });

  it('never takes staying items out of those waiting for a retry (those were placed)', () => {
    const odd = { ...summary, staying: [{ kind: 'projects' as const, source: 'nfs-1', n: 500 }] };
    const nfs1 = countItems(odd).sources[0]!;
    expect(nfs1).toMatchObject({ waiting: 2, retrying: 2, staying: 108 });
  });

  it('counts no item as staying before a bound is reached', () => {
    const c = countItems({ ...summary, staying: undefined, boundsReached: undefined });
    expect(c).toMatchObject({ staying: 0, planned: 186, remaining: 4 + 110 + 19 + 30 });
    expect(partialOutcome(c)).toBeNull();
    expect(stayingWords(c)).toBeNull();
  });

  it('leaves the staying items out of the remaining work (what the ETA is of)', () => {
    expect(countItems(summary).remaining).toBe(36);
  });

  it('says what a partial drain did in the words of a headline', () => {
    const c = countItems(summary);
    expect(partialOutcome(c)).toBe('moved 22 of 186 as planned: move.until reached on nfs-1');
    expect(stayingWords(c)).toBe('127 stay on nfs-1 as planned (move.until)');
    expect(listWords(['nfs-1', 'nfs-2', 'nfs-3'])).toBe('nfs-1, nfs-2 and nfs-3');
    expect(listWords(['nfs-1', 'nfs-2'])).toBe('nfs-1 and nfs-2');
  });

  it("counts a reviewed list's items no longer where it says as not moved, in agreement with its headline", () => {
    const counts = [
      { kind: 'projects' as const, source: 'nfs-1', state: 'moved', n: 1 },
      { kind: 'projects' as const, source: 'nfs-1', state: 'left', n: 4 },
    ];
    const list = countItems({ counts, listRun: true });
    expect(list.kinds).toEqual([expect.objectContaining({ kind: 'projects', total: 5, done: 1, skipped: 4 })]);
    expect(list).toMatchObject({ done: 1, skipped: 4, remaining: 0, planned: 5 });
    expect(listOutcome('l.jsonl', counts)).toBe(
      '1 of the 5 items of the list l.jsonl moved (4 no longer where it says)',
    );
    // Elsewhere an item gone from the source by other means is done: the source is drained of it.
    expect(countItems({ counts })).toMatchObject({ done: 5, skipped: 0 });
  });
});
