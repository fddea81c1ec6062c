/**
 * `run --events`: every line of a real run's event file parses against the documented
 * schema, the lines tell the run's story (steps, moves, failures, quarantine, progress, cap
 * changes) in agreement with the checkpoint, and the last line carries the exit code.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_EVENT_TYPES, RunEventSchema } from '../src/events/run-events.js';
import type { RunEvent } from '../src/events/run-events.js';
import { toRunEvents } from '../src/events/run-events-of-audit.js';
import { auditEvent } from './support/audit-event.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { runCli, sandboxEnv, tempDir, writePlan, writeSeed } from './support/cli-harness.js';

const ROOT = join(import.meta.dirname, '..');

function parseLines(text: string): RunEvent[] {
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line, i) => {
      const parsed = RunEventSchema.safeParse(JSON.parse(line));
      expect(parsed.success, `line ${i + 1}: ${line}\n${parsed.error?.message ?? ''}`).toBe(true);
      return parsed.data as RunEvent;
    });
}

const ofType = <T extends RunEvent['type']>(events: RunEvent[], type: T) =>
  events.filter((e): e is Extract<RunEvent, { type: T }> => e.type === type);

describe('run --events against the in-process sandbox', { timeout: 90_000 }, () => {
  let sandbox: RunningSandbox;
  let dir: string;
  beforeAll(async () => {
    dir = tempDir('events');
    sandbox = await startSandbox({
      seed: writeSeed(dir, { projects: 40, snippets: 5, groups: 3 }),
      workers: 10,
      moveDurationMs: 60,
      faults: { brokenItems: ['project:3'], moveFailRate: 0.1, seed: 7 },
    });
  });
  afterAll(async () => {
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes schema-valid lines that tell the run, and ends with the exit code', async () => {
    const plan = writePlan(dir, { concurrency: 4 });
    const file = join(dir, 'events.jsonl');
    const run = await runCli(['run', plan, '--events', file, '--events-interval', '1s'], {
      cwd: dir,
      env: sandboxEnv(sandbox.url),
    });
    expect(run.code, run.stderr).toBe(3);
    const events = parseLines(readFileSync(file, 'utf8'));

    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]).toMatchObject({ type: 'run.started', plan: 'it', resumed: false, dryRun: false });
    const last = events.at(-1);
    expect(last).toMatchObject({ type: 'run.finished', outcome: 'doneWithQuarantine', exitCode: 3, error: null });

    // Steps: each started one ends, in order, and the drains are among them.
    const starts = ofType(events, 'step.started').map((e) => e.step);
    const ends = ofType(events, 'step.ended');
    expect(starts.slice(0, 3)).toEqual(['preflight', 'storages', 'weights']);
    // The one schedule is one drain step over every source and kind (`drain <sources>/<kinds>`).
    expect(starts.some((st) => /^drain (\S+,)?nfs-1(,\S+)?\/projects(,|$)/.test(st))).toBe(true);
    expect(starts.at(-1)).toBe('verify');
    expect(ends.map((e) => e.step)).toEqual(starts);
    expect(ends.every((e) => e.outcome === 'ok')).toBe(true);

    // Moves agree with the checkpoint's own audit trail.
    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    const audit = store.readEvents(0, 1_000_000);
    store.close();
    const count = (...types: string[]) => audit.filter((e) => types.includes(e.type)).length;
    expect(ofType(events, 'move.scheduled')).toHaveLength(count('move.scheduled', 'move.adopted', 'bulk.move_seen'));
    expect(ofType(events, 'move.finished')).toHaveLength(count('move.finished', 'move.cleanup_failed'));
    expect(ofType(events, 'move.failed').length).toBe(count('move.failed'));
    expect(ofType(events, 'move.failed').length).toBeGreaterThanOrEqual(2);
    const quarantined = ofType(events, 'move.quarantined');
    expect(quarantined).toContainEqual(expect.objectContaining({ kind: 'projects', id: 3, stuck: false, attempts: 2 }));
    expect(quarantined).toHaveLength(last?.type === 'run.finished' ? (last.quarantined ?? -1) : -1);
    expect(ofType(events, 'move.scheduled').every((e) => e.moveId > 0 && !e.bulk)).toBe(true);

    // Progress from the start, the cap in force, and the final counts.
    const progress = ofType(events, 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(ofType(events, 'cap.changed')[0]).toMatchObject({ cap: 4, paused: false, previous: null, limit: 'plan' });

    // Arguments refused before the run opens anything leave the file as it was.
    const again = await runCli(
      ['run', plan, '--events', file, '--state', join(dir, 'state', 'it.db'), '--lease', '5s'],
      { cwd: dir, env: sandboxEnv(sandbox.url) },
    );
    expect(again.code).toBe(2);
    const refused = parseLines(readFileSync(file, 'utf8'));
    expect(refused).toHaveLength(events.length);
  });

  it('writes to standard output with -, the report going to standard error; a refused run ends with exit 4', async () => {
    const plan = writePlan(dir, { name: 'out', concurrency: 2, from: ['nfs-2'] });
    const holder = openCheckpoint(join(dir, 'state', 'out.db'));
    holder.acquireLock({ pid: 1, host: 'elsewhere', startedAt: Date.now() }, () => true, {
      ms: 60_000,
      now: Date.now(),
    });
    const refused = await runCli(['run', plan, '--events', '-'], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(refused.code).toBe(4);
    expect(parseLines(refused.stdout)).toEqual([
      expect.objectContaining({
        type: 'run.finished',
        outcome: 'refused',
        exitCode: 4,
        error: expect.objectContaining({ code: 'SHARDMOVE_LOCKED' }),
      }),
    ]);
    holder.close();

    const run = await runCli(['run', plan, '--events', '-'], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(run.code, run.stderr).toBe(0);
    const events = parseLines(run.stdout);
    expect(events.at(-1)).toMatchObject({
      type: 'run.finished',
      outcome: 'done',
      exitCode: 0,
      error: null,
      quarantined: 0,
    });
    expect(run.stderr).toContain('Weights before');
  });

  it('documents every event type in docs/events.md, and maps the audit events a runbook needs', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'events.md'), 'utf8');
    for (const type of RUN_EVENT_TYPES) expect(doc, type).toContain(`\`${type}\``);
    const state = { run: null as never, step: null };
    expect(
      toRunEvents(
        auditEvent(1, 'move.stuck', {
          kind: 'projects',
          source: 'a',
          id: 1,
          moveId: 9,
          moveState: 'started',
          since: 0,
          phase: 'running',
          limitMs: 1,
        }),
        state,
      ),
    ).toEqual([
      {
        type: 'move.quarantined',
        kind: 'projects',
        source: 'a',
        id: 1,
        reason: 'stuck: move 9 still started',
        attempts: null,
        stuck: true,
        class: 'stuck-running',
      },
    ]);
    expect(
      toRunEvents(
        auditEvent(2, 'move.failed', {
          kind: 'projects',
          source: 'a',
          id: 1,
          moveId: 10,
          error: '5:invalid source repository.',
        }),
        state,
      ),
    ).toEqual([
      {
        type: 'move.failed',
        kind: 'projects',
        source: 'a',
        id: 1,
        moveId: 10,
        error: '5:invalid source repository.',
        class: 'source-missing',
      },
    ]);
    expect(
      toRunEvents(auditEvent(1, 'http.mutating', { method: 'POST', path: '/x', attempt: 1, mutating: true }), state),
    ).toEqual([]);
  });
});
