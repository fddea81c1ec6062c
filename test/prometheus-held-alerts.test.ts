/**
 * The alert rules of docs/operations.md, verbatim, on a real Prometheus and node_exporter, against
 * metrics files the run's own registry wrote for runs held for twenty minutes: one paused by an
 * operator and one held by a destination's room, both with nothing in flight, and one whose moves in
 * flight have not been read for that long (the instance not answering). Only the last is
 * `ShardmoveNoPoll`; the held ones are paused (`shardmove_paused` 1, `shardmove_held` naming why).
 * The twenty minutes are built into the files (the run's clock), not waited for.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { holdOf } from '../src/events/hold.js';
import type { CapData } from '../src/events/vocabulary.js';
import { RunMetrics } from '../src/metrics/run-metrics.js';
import type { StatusSummary } from '../src/store/types.js';
import { ROOT, tempDir } from './support/cli-harness.js';
import { queriesIn } from './support/doc-promql.js';
import { prometheusSkipReason, startPrometheusStack } from './support/prometheus.js';

const skip = prometheusSkipReason();
if (skip) console.warn(`prometheus-held-alerts.test.ts: skipped: ${skip}`);

const MIN = 60_000;

/** A run's file as its metrics observer writes it: the last poll `pollAgoMs` ago, `inFlight` moves open. */
async function fileOf(
  plan: string,
  o: { cap: CapData; paused: boolean; inFlight: number; pollAgoMs: number },
): Promise<string> {
  const now = Date.now();
  const m = new RunMetrics(plan);
  m.response(
    { method: 'GET', path: '/api/v4/project_repository_storage_moves', status: 200 } as never,
    now - o.pollAgoMs,
  );
  const control = { concurrency: null, paused: o.paused, updatedAt: now - o.pollAgoMs };
  const summary: StatusSummary = {
    counts: [
      { kind: 'projects', source: 'nfs-1', state: 'pending', n: 10 },
      { kind: 'projects', source: 'nfs-1', state: 'in_flight', n: o.inFlight },
    ],
    quarantined: [],
    movedLast10Min: 0,
    total: 10 + o.inFlight,
    stuck: [],
    control,
  };
  m.setGauges({
    summary,
    cap: o.cap,
    hold: holdOf(o.cap, control),
    step: 'drain nfs-1/projects',
    dryRun: false,
    startedAt: now - 60 * MIN,
    now,
  });
  return m.render();
}

describe("the docs' alert rules for a run held a long time (real Prometheus)", { timeout: 120_000 }, () => {
  it.skipIf(skip !== null)('fire ShardmoveNoPoll only for moves left unread, and count holds as paused', async () => {
    const dir = tempDir('prom-held');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const textfileDir = join(dir, 'textfile');
    mkdirSync(textfileDir, { recursive: true });
    const paused: CapData = {
      cap: 0,
      ceiling: 4,
      paused: true,
      limit: 'paused',
      reason: 'paused by shardmove control',
    };
    const room: CapData = {
      cap: 0,
      ceiling: 4,
      paused: true,
      limit: 'rule',
      rule: 'capacity:cluster',
      reason: 'free 4.5 GiB below 5 GiB',
    };
    const going: CapData = { cap: 4, ceiling: 4, paused: false, limit: 'plan', reason: 'plan' };
    const files: [string, Promise<string>][] = [
      ['paused', fileOf('paused', { cap: paused, paused: true, inFlight: 0, pollAgoMs: 20 * MIN })],
      ['room', fileOf('room', { cap: room, paused: false, inFlight: 0, pollAgoMs: 20 * MIN })],
      ['unread', fileOf('unread', { cap: going, paused: false, inFlight: 3, pollAgoMs: 20 * MIN })],
    ];
    for (const [plan, text] of files) writeFileSync(join(textfileDir, `shardmove-${plan}.prom`), await text);
    const stack = await startPrometheusStack({ textfileDir, scrapeIntervalMs: 500 });
    onTestFinished(() => stack.stop());
    await stack.waitFor('count(shardmove_run_info)', (s) => s[0]?.value === 3, 30_000);

    const alerts = new Map(
      queriesIn(join(ROOT, 'docs', 'operations.md'), ROOT)
        .filter((q) => q.kind === 'alert')
        .map((q) => [q.name, q.query]),
    );
    const firing = async (name: string) => (await stack.samples(alerts.get(name)!)).map((s) => s.labels.plan).sort();
    expect(await firing('ShardmoveNoPoll')).toEqual(['unread']);
    // ShardmovePaused's expression (its `for: 30m` is Prometheus' to wait): both holds.
    expect(await firing('ShardmovePaused')).toEqual(['paused', 'room']);
    expect(await firing('ShardmoveRunGone')).toEqual([]);
    const held = await stack.samples('shardmove_held == 1');
    expect(held.map((s) => [s.labels.plan, s.labels.by]).sort()).toEqual([
      ['paused', 'control'],
      ['room', 'capacity'],
    ]);
    // The run that goes on has every holder's series at 0.
    const goingOn = await stack.samples('shardmove_held{plan="unread"}');
    expect(goingOn.length).toBeGreaterThan(0);
    expect(goingOn.every((s) => s.value === 0)).toBe(true);
  });
});
