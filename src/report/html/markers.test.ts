import { describe, expect, it } from 'vitest';
import { auditEvent } from '../../../test/support/audit-event.js';
import type { StatusSummary, StoredEvent } from '../../store/types.js';
import { buildStatusReport } from '../status.js';
import { buildReportData } from './data.js';
import { renderHtmlReport } from './render.js';

const T0 = Date.UTC(2026, 10, 23, 22, 0, 0);
const ev: typeof auditEvent = (s, type, data) => auditEvent(T0 + s * 1000, type, data);
const rule = {
  rule: 'gitaly-cpu',
  action: 'pause' as const,
  value: 0.93,
  labels: { instance: 'gitaly-1:9236' },
  op: 'above' as const,
  bound: 0.9,
  since: T0 + 10_000,
  error: null,
};

/** A night of a drain: a rule holds and lets go, Prometheus goes away and comes back, the breaker trips, a window closes. */
function events(): StoredEvent[] {
  const drain = { kind: 'projects' as const, source: 'nfs-1' };
  return [
    ev(0, 'run.started', { resumed: false, dryRun: false, pid: 1 }),
    ev(1, 'step.started', { step: 'drain nfs-1/projects' }),
    ev(10, 'rule.changed', { ...rule, status: 'holding', previous: 'ok' }),
    ev(70, 'rule.changed', { ...rule, value: 0.5, status: 'ok', previous: 'holding', since: null }),
    ev(80, 'rule.changed', {
      ...rule,
      value: null,
      status: 'error',
      previous: 'ok',
      error: 'Prometheus at http://prom:9090 did not answer (ECONNREFUSED)',
    }),
    ev(90, 'rule.changed', { ...rule, value: 0.4, status: 'ok', previous: 'error', since: null }),
    ev(95, 'rule.changed', { ...rule, status: 'pending', previous: 'ok' }),
    ev(100, 'breaker.tripped', {
      failures: 20,
      withinMs: 900_000,
      reason: 'paused by the failure breaker: 20 failed moves within 15m',
    }),
    ev(100, 'control.changed', {
      concurrency: null,
      paused: true,
      pausedBy: 'paused by the failure breaker: 20 failed moves within 15m',
      previous: { concurrency: null, paused: false },
    }),
    ev(200, 'control.changed', { concurrency: null, paused: false, previous: { concurrency: null, paused: true } }),
    ev(300, 'window.closed', { cap: 0, ceiling: 10, reason: 'outside every window', nextOpensAt: T0 + 86_400_000 }),
    ev(400, 'drain.until_reached', { ...drain, bound: 'moved', limitBytes: 2 ** 40, placedBytes: 2 ** 40 + 5 }),
  ];
}

const summary: StatusSummary = { counts: [], quarantined: [], movedLast10Min: 0, total: 0, stuck: [] };

describe("the HTML report's event table", () => {
  it('lists rule holds, Prometheus outages, breaker trips, pauses, windows and bounds, not only steps', () => {
    const status = buildStatusReport('/x.db', null, summary, T0 + 500_000);
    const data = buildReportData({ status, context: null, events: events(), now: T0 + 500_000 });
    expect(data.timeline.markers.map((m) => [m.type, m.label])).toEqual([
      ['run.started', 'run started'],
      ['step', 'drain nfs-1/projects'],
      ['hold', 'held by rule gitaly-cpu: 0.93 {instance="gitaly-1:9236"} above 0.9'],
      ['hold', 'rule gitaly-cpu no longer holds'],
      [
        'outage',
        'Prometheus unreadable: rule gitaly-cpu: Prometheus at http://prom:9090 did not answer (ECONNREFUSED)',
      ],
      ['outage', 'Prometheus answers again: rule gitaly-cpu'],
      ['breaker', 'failure breaker tripped: paused by the failure breaker: 20 failed moves within 15m'],
      ['paused', 'paused: paused by the failure breaker: 20 failed moves within 15m'],
      ['unpaused', 'unpaused'],
      ['window', 'maintenance window closed; the next opens 2026-11-24T22:00:00.000Z'],
      ['bound', 'move.until reached on nfs-1: nothing more is scheduled from it'],
    ]);
    const table = /<table id="markers">([^]*?)<\/table>/.exec(renderHtmlReport(data))![1]!;
    expect(table).toContain('<td>held by rule gitaly-cpu: 0.93 {instance=&#34;gitaly-1:9236&#34;} above 0.9</td>');
    expect(table).toContain(
      '<td>failure breaker tripped: paused by the failure breaker: 20 failed moves within 15m</td>',
    );
    expect(table).toContain('<td>Prometheus answers again: rule gitaly-cpu</td>');
  });
});

describe("the HTML report's timeline: a stop from outside", () => {
  it('marks where the stop was seen (what asked) and where the run ended on it', () => {
    const status = buildStatusReport('/x.db', null, summary, T0 + 500_000);
    const stop = { at: T0 + 5_000, by: 'file' as const };
    const events = [
      ev(0, 'run.started', { resumed: false, dryRun: false, pid: 1 }),
      ev(5, 'control.changed', {
        concurrency: null,
        paused: false,
        stop,
        previous: { concurrency: null, paused: false, stop: null },
      }),
      ev(6, 'run.stopping', { by: 'file', step: 'drain nfs-1/projects', inFlight: 3 }),
      ev(40, 'run.stopped', { by: 'file', step: 'drain nfs-1/projects' }),
    ];
    const data = buildReportData({ status, context: null, events, now: T0 + 500_000 });
    expect(data.timeline.markers.map((m) => [m.type, m.label])).toEqual([
      ['run.started', 'run started'],
      ['hold', 'stopping (the stop file)'],
      ['run.interrupted', 'stopped on request'],
    ]);
  });
});
