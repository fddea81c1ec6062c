import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { StatusSummary } from '../store/types.js';
import { RunMetrics } from './run-metrics.js';
import { holdOf } from '../events/hold.js';

const summary = (over: Partial<StatusSummary> = {}): StatusSummary => ({
  counts: [
    { kind: 'projects', source: 'nfs-1', state: 'pending', n: 5 },
    { kind: 'projects', source: 'nfs-1', state: 'in_flight', n: 2 },
    { kind: 'projects', source: 'nfs-1', state: 'scheduling', n: 1 },
  ],
  quarantined: [],
  movedLast10Min: 0,
  total: 8,
  stuck: [],
  control: { concurrency: 3, paused: true, updatedAt: 1 },
  ...over,
});

const gauges = {
  cap: { cap: 3, ceiling: 3, paused: true, limit: 'paused', reason: 'paused' } as const,
  elapsedMs: 60_000,
  step: 'drain nfs-1/projects',
  dryRun: false,
  startedAt: 1_700_000_000_000,
  now: 1_700_000_060_000,
};
const value = (text: string, name: string, labels: Record<string, string> = {}) =>
  parsePrometheusTextFormat(text)
    .find((f) => f.name === name)
    ?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value;

describe('RunMetrics', () => {
  it('sets the gauges from the summary: zeros for states left, the override cap, paused, NaN ETA without a rate', async () => {
    const m = new RunMetrics('p');
    m.setGauges({ ...gauges, summary: summary() });
    let text = await m.render();
    expect(value(text, 'shardmove_items', { state: 'pending' })).toBe('5');
    expect(value(text, 'shardmove_items', { state: 'moved' })).toBe('0');
    expect(value(text, 'shardmove_moves_in_flight')).toBe('3');
    expect(value(text, 'shardmove_concurrency_cap')).toBe('3');
    expect(value(text, 'shardmove_paused')).toBe('1');
    // prom-client spells it "Nan"; Prometheus parses floats case-insensitively (Go's ParseFloat).
    expect(value(text, 'shardmove_eta_seconds')?.toLowerCase()).toBe('nan');
    // The next refresh: everything moved, no override: the old series drop to 0, the cap is the plan's.
    m.setGauges({
      ...gauges,
      step: 'verify',
      summary: summary({
        counts: [{ kind: 'projects', source: 'nfs-1', state: 'moved', n: 8 }],
        control: undefined,
        movedLast10Min: 8,
      }),
      cap: { cap: 10, ceiling: 10, paused: false, limit: 'plan', reason: 'plan' },
    });
    text = await m.render();
    expect(value(text, 'shardmove_items', { state: 'pending' })).toBe('0');
    expect(value(text, 'shardmove_items', { state: 'moved' })).toBe('8');
    expect(value(text, 'shardmove_concurrency_cap')).toBe('10');
    expect(value(text, 'shardmove_eta_seconds')).toBe('0');
    expect(parsePrometheusTextFormat(text).find((f) => f.name === 'shardmove_run_info')?.metrics).toEqual([
      { value: '1', labels: { plan: 'p', step: 'verify', dry_run: 'false' } },
    ]);
  });

  it('counts ended moves and requests, and takes a poll time only from a successful read of the moves', async () => {
    const m = new RunMetrics('p');
    m.moveEnded({
      kind: 'projects',
      source: 'a',
      itemId: 1,
      moveId: 1,
      startAt: 0,
      endAt: 3000,
      end: 'finished',
      error: null,
    });
    m.moveEnded({
      kind: 'projects',
      source: 'a',
      itemId: 2,
      moveId: 2,
      startAt: null,
      endAt: 3000,
      end: 'failed',
      error: 'x',
    });
    m.moveEnded({
      kind: 'projects',
      source: 'a',
      itemId: 3,
      moveId: 3,
      startAt: null,
      endAt: 3000,
      end: 'failed',
      error: '5:invalid source repository.',
    });
    m.moveEnded({
      kind: 'projects',
      source: 'a',
      itemId: 4,
      moveId: 4,
      startAt: null,
      endAt: 3000,
      end: 'stuck',
      error: null,
      stuckPhase: 'queued',
    });
    m.response(
      { method: 'POST', path: '/projects/1/repository_storage_moves', attempt: 1, mutating: true, status: 201 },
      5_000,
    );
    m.response(
      { method: 'GET', path: '/project_repository_storage_moves?page=1', attempt: 1, mutating: false, status: 503 },
      6_000,
    );
    m.response({ method: 'GET', path: '/projects?page=1', attempt: 1, mutating: false, status: 200 }, 7_000);
    m.response(
      { method: 'GET', path: '/project_repository_storage_moves?page=1', attempt: 1, mutating: false, status: null },
      8_000,
    );
    let text = await m.render();
    // No series before the first successful poll (a long listing must not look like a stalled drain).
    expect(value(text, 'shardmove_last_successful_poll_timestamp_seconds')).toBeUndefined();
    m.response(
      { method: 'GET', path: '/project_repository_storage_moves?page=1', attempt: 2, mutating: false, status: 200 },
      9_000,
    );
    text = await m.render();
    expect(value(text, 'shardmove_last_successful_poll_timestamp_seconds')).toBe('9');
    expect(value(text, 'shardmove_moves_finished_total', { kind: 'projects', outcome: 'finished' })).toBe('1');
    expect(value(text, 'shardmove_moves_failed_total', { kind: 'projects', outcome: 'failed', class: 'unknown' })).toBe(
      '1',
    );
    expect(
      value(text, 'shardmove_moves_failed_total', { kind: 'projects', outcome: 'failed', class: 'source-missing' }),
    ).toBe('1');
    expect(
      value(text, 'shardmove_moves_failed_total', { kind: 'projects', outcome: 'stuck', class: 'stuck-queued' }),
    ).toBe('1');
    expect(value(text, 'shardmove_http_requests_total', { method: 'GET', status: 'error' })).toBe('1');
    expect(value(text, 'shardmove_http_requests_total', { method: 'GET', status: '503' })).toBe('1');
    // Only the timed move is in the histogram (the failed one's start was never seen).
    expect(text).toMatch(/^shardmove_move_duration_seconds_count\{plan="p",kind="projects"\} 1$/m);
    expect(text).toMatch(/^shardmove_move_duration_seconds_sum\{plan="p",kind="projects"\} 3$/m);
    // A private registry: nothing was added to prom-client's global one.
    expect(await register.metrics()).not.toContain('shardmove_');
  });

  it('labels every series with the plan, and writes a family only once it has a series', async () => {
    const m = new RunMetrics('retire "nfs"');
    let text = await m.render();
    expect(text).toBe('');
    m.setGauges({ ...gauges, summary: summary() });
    m.moveEnded({
      kind: 'projects',
      source: 'a',
      itemId: 1,
      moveId: 1,
      startAt: 0,
      endAt: 2000,
      end: 'finished',
      error: null,
    });
    m.response(
      { method: 'GET', path: '/project_repository_storage_moves', attempt: 1, mutating: false, status: 200 },
      9_000,
    );
    text = await m.render();
    const samples = text.split('\n').filter((l) => l.startsWith('shardmove_'));
    expect(samples.length).toBeGreaterThan(20);
    for (const line of samples) expect(line).toContain('plan="retire \\"nfs\\""');
    // No family without a series (the failure counter has none yet).
    expect(text).not.toContain('shardmove_moves_failed_total');
    expect(parsePrometheusTextFormat(text).every((f) => f.metrics.length > 0)).toBe(true);
  });

  it('replaces the series of a live run by its outcome when it ends', async () => {
    const m = new RunMetrics('p');
    m.setGauges({ ...gauges, summary: summary() });
    m.response(
      { method: 'GET', path: '/project_repository_storage_moves', attempt: 1, mutating: false, status: 200 },
      9_000,
    );
    let text = await m.render();
    const live = [
      'shardmove_eta_seconds',
      'shardmove_items_remaining',
      'shardmove_moves_in_flight',
      'shardmove_concurrency_cap',
      'shardmove_paused',
      'shardmove_last_successful_poll_timestamp_seconds',
      'shardmove_heartbeat_timestamp_seconds',
    ];
    for (const name of live) expect(value(text, name), name).toBeDefined();
    expect(value(text, 'shardmove_heartbeat_timestamp_seconds')).toBe(String(gauges.now / 1000));
    expect(value(text, 'shardmove_run_end_timestamp_seconds')).toBeUndefined();
    m.end('done_with_quarantine', 1_700_000_100_000);
    // A refresh after the end (the final write) and a late poll answer bring none of them back.
    m.setGauges({ ...gauges, step: 'doneWithQuarantine', summary: summary() });
    m.response(
      { method: 'GET', path: '/project_repository_storage_moves', attempt: 1, mutating: false, status: 200 },
      9_500,
    );
    text = await m.render();
    for (const name of live) expect(value(text, name), name).toBeUndefined();
    expect(
      parsePrometheusTextFormat(text).find((f) => f.name === 'shardmove_run_end_timestamp_seconds')?.metrics,
    ).toEqual([{ value: '1700000100', labels: { plan: 'p', outcome: 'done_with_quarantine' } }]);
    // What stays is true of a finished run: items by state, the start, the run's last step.
    expect(value(text, 'shardmove_items', { state: 'pending' })).toBe('5');
    expect(value(text, 'shardmove_run_start_timestamp_seconds')).toBe('1700000000');
    expect(value(text, 'shardmove_run_info', { step: 'doneWithQuarantine' })).toBe('1');
  });

  it('counts a hold by room, a rule or the breaker as paused, names it in shardmove_held, and not a window', async () => {
    const m = new RunMetrics('p');
    const held = (cap: Parameters<typeof holdOf>[0]) => ({
      ...gauges,
      cap,
      hold: holdOf(cap, { concurrency: null, paused: false, updatedAt: 1 }),
      summary: summary({ control: undefined }),
    });
    m.setGauges(held({ cap: 0, ceiling: 3, paused: true, limit: 'rule', rule: 'capacity:cluster', reason: 'no room' }));
    let text = await m.render();
    expect(value(text, 'shardmove_paused')).toBe('1');
    expect(value(text, 'shardmove_held', { by: 'capacity' })).toBe('1');
    m.setGauges(held({ cap: 0, ceiling: 3, paused: true, limit: 'window', until: null, reason: 'closed' }));
    text = await m.render();
    expect(value(text, 'shardmove_paused')).toBe('0');
    expect(value(text, 'shardmove_held', { by: 'window' })).toBe('1');
    expect(value(text, 'shardmove_held', { by: 'capacity' })).toBe('0');
    m.setGauges(held({ cap: 3, ceiling: 3, paused: false, limit: 'plan', reason: 'plan' }));
    text = await m.render();
    expect(value(text, 'shardmove_paused')).toBe('0');
    const series = parsePrometheusTextFormat(text).find((f) => f.name === 'shardmove_held')?.metrics ?? [];
    expect(series.length).toBeGreaterThan(0);
    expect(series.every((m) => m.value === '0')).toBe(true);
    m.end('done', gauges.now);
    expect(await m.render()).not.toContain('shardmove_held');
  });
});
