import { describe, expect, it } from 'vitest';
import { auditEvent } from '../../test/support/audit-event.js';
import { LEGACY_AUDIT_NAMES } from './legacy-names.js';
import { PRIVATE, RUN_EVENTS_OF_AUDIT, toRunEvents } from './run-events-of-audit.js';
import type { SinkState } from './run-events-of-audit.js';
import { RUN_EVENT_TYPES, RunEventSchema } from './run-events.js';
import type { RunEventBody } from './run-events.js';
import { AUDIT_EVENTS } from './vocabulary.js';
import type { AuditEvent, AuditType, CapData } from './vocabulary.js';

const state = (): SinkState => ({
  run: { plan: { name: 'p' }, checkpoint: '/c.db', host: 'h', instanceVersion: () => '17.0.0' },
  step: null,
});

/** A line as the sink writes it, parsed against the public schema. */
const parsed = (body: RunEventBody, seq = 1) =>
  RunEventSchema.parse({ v: 1, seq, at: '2026-11-23T22:00:00.000Z', ...body });

const item = { kind: 'projects', source: 'nfs-1', id: 7 } as const;
const at = Date.UTC(2026, 10, 23, 22);

/** One event of each audit type that shares its name with a public one. */
const SHARED: AuditEvent[] = [
  auditEvent(at, 'run.started', { resumed: true, dryRun: false, pid: 9 }),
  auditEvent(at, 'step.started', { step: 'verify' }),
  auditEvent(at, 'move.scheduled', { ...item, moveId: 3, moveState: 'scheduled' }),
  auditEvent(at, 'move.finished', { ...item, moveId: 3 }),
  auditEvent(at, 'move.failed', { ...item, moveId: 3, error: 'Failed to verify project repository checksum' }),
  auditEvent(at, 'move.quarantined', { ...item, attempts: 2, reason: 'attempts used up' }),
  auditEvent(at, 'cap.changed', {
    cap: 4,
    ceiling: 4,
    paused: false,
    limit: 'plan',
    reason: "the plan's move.concurrency",
    previous: null,
  }),
  auditEvent(at, 'breaker.tripped', { failures: 20, withinMs: 900_000, reason: 'paused by the failure breaker' }),
  auditEvent(at, 'window.opened', { cap: 4, ceiling: 4, reason: null, window: 'Sat 22:00-06:00', closesAt: at }),
  auditEvent(at, 'window.closed', { cap: 0, ceiling: 4, reason: 'x', window: 'Sat 22:00-06:00', nextOpensAt: at }),
  auditEvent(at, 'network.split', { network: 1, bytes: 10, extraBytes: 2 }),
  auditEvent(at, 'lock.taken_over', {
    previous: { pid: 1, host: 'old', startedAt: 0 },
    reason: 'stale',
    heartbeatAgeMs: 5,
  }),
  auditEvent(at, 'run.stopping', { by: 'file', step: 'drain', inFlight: 2 }),
];

describe('the table from audit events to public lines', () => {
  /** The types of `vocabulary` the table has no row for, and its rows for types the vocabulary lacks. */
  const unmatched = (vocabulary: readonly string[], table: object) => ({
    unmapped: vocabulary.filter((t) => !(t in table)),
    unknown: Object.keys(table).filter((t) => !vocabulary.includes(t)),
  });

  it('has a row for every audit type, each the lines it stands for or PRIVATE', () => {
    expect(unmatched(Object.keys(AUDIT_EVENTS), RUN_EVENTS_OF_AUDIT)).toEqual({ unmapped: [], unknown: [] });
    for (const [type, lines] of Object.entries(RUN_EVENTS_OF_AUDIT))
      expect(lines === PRIVATE || typeof lines === 'function', type).toBe(true);
  });

  it('names a new audit type that is neither mapped nor private', () => {
    const vocabulary = [...Object.keys(AUDIT_EVENTS), 'drain.new_thing'];
    expect(unmatched(vocabulary, RUN_EVENTS_OF_AUDIT)).toEqual({ unmapped: ['drain.new_thing'], unknown: [] });
  });

  it('gives an audit event that has a public name the line of that name, valid against the schema', () => {
    for (const e of SHARED) {
      const lines = toRunEvents(e, state());
      expect(
        lines.map((l) => l.type),
        e.type,
      ).toContain(e.type);
      for (const line of lines) expect(() => parsed(line), `${e.type} -> ${line.type}`).not.toThrow();
    }
    // Every public name the audit log also uses is one of them, but the CLI's last line (with the exit code).
    const shared = RUN_EVENT_TYPES.filter((t) => t in AUDIT_EVENTS);
    expect(shared.sort()).toEqual([...SHARED.map((e) => e.type), 'run.finished'].sort());
  });

  it("keeps no old name in the vocabulary: each lives on only in the legacy table, read as today's", () => {
    for (const [old, now] of Object.entries(LEGACY_AUDIT_NAMES)) {
      if (now.type === null) expect(AUDIT_EVENTS, old).not.toHaveProperty(old);
      else {
        expect(AUDIT_EVENTS, old).toHaveProperty(now.type);
        if (now.type !== old) expect(AUDIT_EVENTS, old).not.toHaveProperty(old);
      }
    }
    expect(Object.keys(AUDIT_EVENTS)).toEqual(expect.arrayContaining(['step.started', 'lock.taken_over']));
  });

  it('writes nothing for a private audit event', () => {
    const privates = (Object.keys(RUN_EVENTS_OF_AUDIT) as AuditType[]).filter(
      (t) => RUN_EVENTS_OF_AUDIT[t] === PRIVATE,
    );
    expect(privates).toContain('http.mutating');
    expect(
      toRunEvents(auditEvent(at, 'http.mutating', { method: 'POST', path: '/x', attempt: 1, mutating: true }), state()),
    ).toEqual([]);
  });
});

describe('pauses, from the cap the drain records', () => {
  const plan: CapData = { cap: 8, ceiling: 8, paused: false, limit: 'plan', reason: "the plan's move.concurrency" };
  const control: CapData = {
    cap: 0,
    ceiling: 0,
    paused: true,
    limit: 'paused',
    reason: 'paused with shardmove control',
  };
  const breaker: CapData = {
    ...control,
    reason: 'paused by the failure breaker: 20 moves failed within 15m (retry.pause_after)',
  };
  const window: CapData = {
    cap: 0,
    ceiling: 8,
    paused: false,
    limit: 'window',
    reason: 'outside every maintenance window',
    until: Date.UTC(2026, 10, 28, 22),
  };
  const rule = (name: string): CapData => ({
    cap: 0,
    ceiling: 8,
    paused: false,
    limit: 'rule',
    reason: `rule ${name}: holds`,
    rule: name,
    since: at,
  });
  const throttle = (cap: number): CapData => ({
    cap,
    ceiling: 8,
    paused: false,
    limit: 'throttle',
    reason: 'Gitaly unhealthy',
  });
  const stopping: CapData = { cap: 0, ceiling: 0, paused: false, limit: 'stopping', reason: 'stopping' };
  const pauses = (previous: CapData | null, cap: CapData) =>
    toRunEvents(auditEvent(at, 'cap.changed', { ...cap, previous }), state())
      .filter((l) => l.type !== 'cap.changed')
      .map((l) => {
        parsed(l);
        return l;
      });

  it.each([
    ['a run that starts at its cap', null, plan, []],
    ['a pause by an operator', plan, control, [{ type: 'run.paused', by: 'control', reason: control.reason }]],
    ['its end', control, plan, [{ type: 'run.unpaused', by: 'control', cap: 8 }]],
    ['the breaker', plan, breaker, [{ type: 'run.paused', by: 'breaker', reason: breaker.reason }]],
    ['a resumed run that is paused', null, control, [{ type: 'run.paused', by: 'control', reason: control.reason }]],
    [
      'a closed window',
      plan,
      window,
      [{ type: 'run.paused', by: 'window', reason: window.reason, until: '2026-11-28T22:00:00.000Z' }],
    ],
    [
      'a rule holding once the window opens',
      window,
      rule('disk-busy'),
      [{ type: 'run.paused', by: 'rule', reason: 'rule disk-busy: holds', rule: 'disk-busy' }],
    ],
    [
      'another rule: the room',
      rule('disk-busy'),
      rule('capacity:cluster'),
      [{ type: 'run.paused', by: 'capacity', reason: 'rule capacity:cluster: holds', rule: 'capacity:cluster' }],
    ],
    [
      'the room released under the throttle',
      rule('capacity:cluster'),
      throttle(2),
      [{ type: 'run.unpaused', by: 'capacity', cap: 2 }],
    ],
    ['a lower cap is no pause', throttle(2), throttle(1), []],
    [
      'the throttle at 0',
      throttle(1),
      throttle(0),
      [{ type: 'run.paused', by: 'throttle', reason: 'Gitaly unhealthy' }],
    ],
    ['a new wording of the same hold', control, { ...control, ceiling: 0 }, []],
    ['a stop is no pause', plan, stopping, []],
    ['nor, for a paused run, an unpause', control, stopping, []],
  ] as const)('%s', (_what, previous, cap, expected) => {
    expect(pauses(previous, cap)).toEqual(expected);
  });

  it('passes the breaker on as it tripped', () => {
    const e = auditEvent(at, 'breaker.tripped', { failures: 20, withinMs: 900_000, reason: breaker.reason });
    expect(toRunEvents(e, state())).toEqual([
      { type: 'breaker.tripped', failures: 20, withinMs: 900_000, reason: breaker.reason },
    ]);
  });
});
