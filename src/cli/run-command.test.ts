import { describe, expect, it } from 'vitest';
import { runCommand } from './run.js';

describe('the command that continues a run, as a stopped run prints it', () => {
  it('names the plan, the checkpoint and the dry run, pasteable into a shell', () => {
    expect(runCommand({ plan: 'plans/retire-nfs.yaml', dryRun: false })).toBe('shardmove run plans/retire-nfs.yaml');
    expect(runCommand({ plan: 'my plans/it.yaml', state: "-it's.db", dryRun: true })).toBe(
      `shardmove run 'my plans/it.yaml' --state './-it'\\''s.db' --dry-run`,
    );
  });

  it('keeps every flag that makes it the same run: the list, the outputs, the schedule and the lease', () => {
    expect(
      runCommand({
        plan: 'p.yaml',
        dryRun: false,
        only: 'reviewed list.csv',
        itemsFormat: 'csv',
        ignoreSchedule: true,
        lease: '2m',
        events: '-',
        eventsInterval: '10s',
        metricsFile: '/var/lib/node_exporter/shardmove.prom',
      }),
    ).toBe(
      "shardmove run p.yaml --only 'reviewed list.csv' --items-format csv --ignore-schedule --lease 2m --events - --events-interval 10s --metrics-file /var/lib/node_exporter/shardmove.prom",
    );
    expect(runCommand({ plan: 'p.yaml', dryRun: true, items: '-l.jsonl', events: 'e v.jsonl' })).toBe(
      "shardmove run p.yaml --dry-run --items ./-l.jsonl --events 'e v.jsonl'",
    );
  });

  it("keeps --accept-foreign-moves (the run that continues meets those moves too) and a dry run's --detailed-exitcode", () => {
    expect(runCommand({ plan: 'p.yaml', dryRun: false, acceptForeignMoves: true, ignoreSchedule: true })).toBe(
      'shardmove run p.yaml --ignore-schedule --accept-foreign-moves',
    );
    expect(runCommand({ plan: 'p.yaml', dryRun: true, detailedExitcode: true })).toBe(
      'shardmove run p.yaml --dry-run --detailed-exitcode',
    );
  });
});
