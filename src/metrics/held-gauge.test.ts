import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import type { CapData } from '../events/vocabulary.js';
import type { StatusSummary } from '../store/types.js';
import { RunMetrics } from './run-metrics.js';

const summary = (paused: boolean): StatusSummary => ({
  counts: [{ kind: 'projects', source: 'nfs-1', state: 'in_flight', n: 2 }],
  quarantined: [],
  movedLast10Min: 0,
  total: 2,
  stuck: [],
  control: { concurrency: null, paused, updatedAt: 1 },
});
const base = { step: 'drain nfs-1/projects', dryRun: false, startedAt: 1_700_000_000_000, now: 1_700_000_060_000 };
const OUTAGE: CapData = {
  cap: 0,
  ceiling: 10,
  paused: false,
  limit: 'outage',
  reason: 'the instance has not answered since 23:41:02 UTC (ECONNREFUSED); trying every 10s',
  since: 1_700_000_000_000,
};

async function held(m: RunMetrics): Promise<Record<string, string>> {
  const family = parsePrometheusTextFormat(await m.render()).find((f) => f.name === 'shardmove_held');
  // Only the holders at 1: every other one has its series at 0.
  const on = (family?.metrics ?? []).filter((s) => s.value === '1');
  expect((family?.metrics ?? []).every((s) => s.value === '0' || s.value === '1')).toBe(true);
  return Object.fromEntries(on.map((s) => [s.labels?.['by'] ?? '', s.value ?? '']));
}

describe('shardmove_held', () => {
  it('names what holds the run: the outage while the instance does not answer, nothing once it answers', async () => {
    const m = new RunMetrics('p');
    m.setGauges({ ...base, summary: summary(false), cap: OUTAGE });
    expect(await held(m)).toEqual({ outage: '1' });
    // A pause from the operator wins over the outage it also watches.
    m.setGauges({ ...base, summary: summary(true), cap: { ...OUTAGE, paused: true } });
    expect(await held(m)).toEqual({ control: '1' });
    m.setGauges({
      ...base,
      summary: summary(false),
      cap: { cap: 10, ceiling: 10, paused: false, limit: 'plan', reason: 'plan' },
    });
    expect(await held(m)).toEqual({});
    m.setGauges({ ...base, summary: summary(false), cap: OUTAGE });
    m.end('failed', base.now);
    expect(await held(m)).toEqual({});
    expect(parsePrometheusTextFormat(await m.render()).find((f) => f.name === 'shardmove_held')).toBeUndefined();
  });
});
