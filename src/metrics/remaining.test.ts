import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import type { StatusSummary } from '../store/types.js';
import { etaOf, remainingOf } from '../report/pace.js';
import { RunMetrics } from './run-metrics.js';

const value = (text: string, name: string) =>
  parsePrometheusTextFormat(text).find((f) => f.name === name)?.metrics[0]?.value;

describe('shardmove_items_remaining of a partial drain', () => {
  it('leaves out the items its reached move.until bound keeps on the source, and so does the ETA', async () => {
    // 26 placed (20 moved, 6 in flight), 141 never placed on nfs-1, whose bound is reached.
    const summary: StatusSummary = {
      counts: [
        { kind: 'projects', source: 'nfs-1', state: 'moved', n: 20 },
        { kind: 'projects', source: 'nfs-1', state: 'in_flight', n: 6 },
        { kind: 'projects', source: 'nfs-1', state: 'pending', n: 108 },
        { kind: 'snippets', source: 'nfs-1', state: 'pending', n: 33 },
      ],
      quarantined: [],
      movedLast10Min: 6,
      total: 167,
      stuck: [],
      boundsReached: ['nfs-1'],
      staying: [
        { kind: 'projects', source: 'nfs-1', n: 108 },
        { kind: 'snippets', source: 'nfs-1', n: 33 },
      ],
    };
    const m = new RunMetrics('p');
    const base = {
      cap: null,
      // The run's pace, 6 moves a minute, over what remains: the staying items are not waited for.
      pace: { perMinute: 6, etaMs: etaOf(remainingOf(summary), 6, false), remaining: remainingOf(summary) },
      step: 'drain nfs-1/projects',
      dryRun: false,
      startedAt: 0,
      now: 60_000,
    };
    m.setGauges({ ...base, summary });
    const text = await m.render();
    expect(value(text, 'shardmove_items_remaining')).toBe('6');
    // 6 moves a minute: one more minute for the 6 left.
    expect(value(text, 'shardmove_eta_seconds')).toBe('60');
  });
});
