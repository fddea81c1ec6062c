/**
 * The delivery worker of `notify:` against a real checkpoint (in memory) with senders that answer
 * as the test says: notifications are recorded before they are sent, each target's go out in order,
 * a target that fails is tried again with backoff on the run's clock (not sooner), one that cannot
 * take an event is given up for this run and the queue goes on, a new worker (a resumed run) sends
 * what an earlier one recorded or never got to, the run's end delivers `run.finished` within its
 * wait and leaves the rest, and a lost lease sends the last events once without writing. Judged
 * from what the senders got and the checkpoint's rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { RunEvent, RunEventBody } from '../src/events/run-events.js';
import { RunEventSchema } from '../src/events/run-events.js';
import { backoffMs, httpResult, spawnResult, BACKOFF_MAX_MS } from '../src/notify/policy.js';
import type { DeliveryResult } from '../src/notify/policy.js';
import { eventLine, slackText } from '../src/notify/text.js';
import type { Delivery, Sender } from '../src/notify/types.js';
import { createNotifier } from '../src/notify/worker.js';
import type { Notifier } from '../src/notify/worker.js';
import type { NotifyTarget } from '../src/plan/notify-field.js';
import { NOTIFY_EVENTS } from '../src/plan/notify-field.js';
import { PaceMeter } from '../src/report/pace.js';
import type { ObservedRun } from '../src/runtime/observe/observer.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import type { Checkpoint } from '../src/store/checkpoint.js';
import { createManualClock, testPlan } from './support/fake-runtime-deps.js';

const HOOK = 'https://alerts.example.com/hooks/shardmove';
const webhook = (on: NotifyTarget['on'], url = HOOK): NotifyTarget => ({
  kind: 'webhook',
  url,
  format: 'json',
  token: null,
  on,
  all: false,
  timeoutMs: 1_000,
  path: 'notify[0]',
});

/** A sender whose answers the test queues (ok when none is queued); every attempt is kept. */
function scriptedSender() {
  const got: Delivery[] = [];
  const answers: (DeliveryResult | 'hang')[] = [];
  const sender: Sender & { got: Delivery[]; answers: typeof answers } = {
    got,
    answers,
    send: (d) => {
      got.push(d);
      const a = answers.shift() ?? { ok: true };
      if (a !== 'hang') return Promise.resolve(a);
      return new Promise((resolve) =>
        d.signal.addEventListener('abort', () => resolve({ ok: false, permanent: false, error: 'aborted' })),
      );
    },
    close: () => Promise.resolve(),
  };
  return sender;
}

let stores: Checkpoint[] = [];
afterEach(() => {
  for (const s of stores) if (s['db'].open) s.close();
  stores = [];
});

function setup(notify: NotifyTarget[], opts: { dryRun?: boolean; file?: string; pid?: number } = {}) {
  const store = openCheckpoint(opts.file ?? ':memory:');
  stores.push(store);
  const clock = createManualClock();
  const pid = opts.pid ?? 1;
  // A holder with another pid is dead (a killed run): its lock is taken over.
  store.acquireLock({ pid, host: 'h', startedAt: clock.now() }, (p) => p === pid, { ms: 60_000, now: clock.now() });
  const seqOfFirstEvent = store.lastEventSeq() + 1;
  const plan = testPlan({ name: 'p', notify });
  const run = (): ObservedRun => ({
    plan,
    checkpoint: '/x/p.db',
    host: 'h',
    fromSeq: 0,
    store,
    notifications: store.notifications,
    clock,
    startedAt: clock.now(),
    pace: new PaceMeter(clock.now(), (from) => store.ownMovesSince(from, clock.now())),
    dryRun: opts.dryRun ?? false,
    step: () => 'preflight',
  });
  return { store, clock, run, seqOfFirstEvent };
}

function notifier(sender: Sender, last: RunEventBody[] = [], finalWaitMs = 5_000): Notifier {
  return createNotifier({
    planFile: '/x/plan.yaml',
    cwd: '/x',
    env: {},
    lastEvents: () => last,
    onWarning: () => undefined,
    onNote: () => undefined,
    senders: { webhook: sender, exec: sender },
    finalWaitMs,
  });
}

const quarantine = (store: Checkpoint, id: number, at: number) =>
  store.appendEvent('move.quarantined', { kind: 'projects', source: 'nfs-1', id, attempts: 3, reason: 'boom' }, at);
const types = (ds: Delivery[]) => ds.map((d) => `${d.event.type}#${d.event.seq}`);
const rows = (store: Checkpoint) =>
  (
    store['db']
      .prepare('SELECT event_seq, attempts, next_attempt_at, delivered_at FROM notify_deliveries ORDER BY event_seq')
      .all() as {
      event_seq: number;
      attempts: number;
      next_attempt_at: number | null;
      delivered_at: number | null;
    }[]
  ).map((r) => ({
    seq: r.event_seq,
    attempts: r.attempts,
    delivered: r.delivered_at !== null,
    next: r.next_attempt_at,
  }));

describe('the delivery worker', () => {
  it('records each wanted event before sending it, sends it as the --events line, and marks it delivered', async () => {
    const { store, clock, run } = setup([webhook(['run.started', 'move.quarantined'])]);
    const sender = scriptedSender();
    const n = notifier(sender);
    store.appendEvent('run.started', { resumed: false, dryRun: false, pid: 1 }, clock.now());
    store.appendEvent('step.started', { step: 'preflight' }, clock.now());
    quarantine(store, 7, clock.now());
    n.started!(run());
    await vi.waitFor(() => expect(sender.got).toHaveLength(2));
    expect(types(sender.got)).toEqual(['run.started#1', 'move.quarantined#2']);
    for (const d of sender.got) expect(RunEventSchema.safeParse(d.event).success).toBe(true);
    expect(sender.got[1]!.event).toMatchObject({ kind: 'projects', id: 7, reason: 'boom', attempts: 3 });
    expect(sender.got[1]!.line).toBe(
      'shardmove p on h: projects 7 on nfs-1 QUARANTINED after 3 attempt(s) (unknown): boom',
    );
    await vi.waitFor(() => expect(rows(store).every((r) => r.delivered)).toBe(true));
    expect(rows(store).map((r) => r.attempts)).toEqual([1, 1]);
    await n.stopped!();
  });

  it('tries a failing target again only after its backoff on the run clock, in order, then goes on', async () => {
    const { store, clock, run } = setup([webhook(['move.quarantined'])]);
    const sender = scriptedSender();
    sender.answers.push({ ok: false, permanent: false, error: 'HTTP 500' });
    const n = notifier(sender);
    quarantine(store, 1, clock.now());
    quarantine(store, 2, clock.now());
    n.started!(run());
    await vi.waitFor(() => expect(rows(store)[0]!.next).toBe(clock.now() + backoffMs(1)));
    // Not sooner: the queue waits behind its head, whatever wakes the worker.
    clock.advance(backoffMs(1) - 1);
    n.progress!();
    expect(types(sender.got)).toEqual(['move.quarantined#1']);
    clock.advance(1_000);
    n.progress!();
    await vi.waitFor(() => expect(rows(store).every((r) => r.delivered)).toBe(true));
    expect(types(sender.got)).toEqual(['move.quarantined#1', 'move.quarantined#1', 'move.quarantined#2']);
    expect(sender.got.map((d) => d.attempt)).toEqual([1, 2, 1]);
    await n.stopped!();
  });

  it('gives up what the target refuses for good (this run only) and delivers the rest', async () => {
    const { store, clock, run } = setup([webhook(['move.quarantined'])]);
    const sender = scriptedSender();
    sender.answers.push({ ok: false, permanent: true, error: 'HTTP 400: bad' });
    const n = notifier(sender);
    quarantine(store, 1, clock.now());
    quarantine(store, 2, clock.now());
    n.started!(run());
    await vi.waitFor(() => expect(rows(store)[1]?.delivered).toBe(true));
    expect(rows(store)[0]).toMatchObject({ seq: 1, delivered: false, next: null, attempts: 1 });
    await n.stopped!();
    expect(n.left?.waiting).toEqual([
      expect.objectContaining({
        waiting: 1,
        givenUp: 1,
        inPlan: true,
        oldest: expect.objectContaining({ lastError: 'HTTP 400: bad' }),
      }),
    ]);
    // The next run tries it again, once.
    const again = scriptedSender();
    const m = notifier(again);
    m.started!(run());
    await vi.waitFor(() => expect(rows(store)[0]?.delivered).toBe(true));
    expect(types(again.got)).toEqual(['move.quarantined#1']);
    await m.stopped!();
  });

  it('resumes from its cursor: what a killed run recorded, and what it never got to, goes out once the next run starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardmove-notify-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'p.db');
    const first = setup([webhook(['move.quarantined'])], { file });
    const hangs = scriptedSender();
    hangs.answers.push('hang');
    const killed = notifier(hangs);
    quarantine(first.store, 1, first.clock.now());
    killed.started!(first.run());
    await vi.waitFor(() => expect(hangs.got).toHaveLength(1));
    // kill -9 mid-delivery: its connection is gone, and two more events it committed never got read.
    first.store['db'].close();
    const dying = openCheckpoint(file);
    quarantine(dying, 2, first.clock.now());
    quarantine(dying, 3, first.clock.now());
    dying.close();
    const second = setup([webhook(['move.quarantined'])], { file, pid: 2 });
    expect(second.store.notifications.cursor()).toBe(first.seqOfFirstEvent);
    const sender = scriptedSender();
    const resumed = notifier(sender);
    // The resumed run's own events start later in the log: it reads on from the cursor, not from them.
    resumed.started!({ ...second.run(), fromSeq: second.store.lastEventSeq() });
    await vi.waitFor(() => expect(rows(second.store).filter((r) => r.delivered)).toHaveLength(3));
    expect(types(sender.got)).toEqual(['move.quarantined#1', 'move.quarantined#2', 'move.quarantined#3']);
    expect(sender.got.map((d) => (d.event as Extract<RunEvent, { type: 'move.quarantined' }>).id)).toEqual([1, 2, 3]);
    // The same object as the attempt the kill cut short: a receiver may drop the repeat.
    expect(sender.got[0]!.event).toEqual(hangs.got[0]!.event);
    expect(rows(second.store)[0]!.attempts).toBe(2);
    await resumed.stopped!();
  });

  it("delivers the run's last event at its end, and leaves what does not make it within the wait", async () => {
    const { store, clock, run } = setup([webhook(['run.finished']), webhook(['run.finished'], `${HOOK}/2`)]);
    const ok = scriptedSender();
    const finished: RunEventBody = { type: 'run.finished', outcome: 'done', exitCode: 0, error: null, quarantined: 0 };
    const hangs = scriptedSender();
    hangs.answers.push('hang');
    const both: Sender = {
      send: (d) => (d.target.plan.kind === 'webhook' && d.target.plan.url === HOOK ? ok.send(d) : hangs.send(d)),
      close: () => Promise.resolve(),
    };
    const n = notifier(both, [finished], 50);
    n.started!(run());
    n.ended({ outcome: { kind: 'interrupted' } });
    const stopped = n.stopped!();
    // The wait is on the run's clock: once the hanging target holds the end, the test moves past it.
    await vi.waitFor(() => expect(hangs.got).toHaveLength(1));
    clock.advance(50);
    await stopped;
    expect(types(ok.got)).toEqual(['run.finished#1']);
    expect(ok.got[0]!.event).toMatchObject({ outcome: 'done', exitCode: 0 });
    expect(hangs.got).toHaveLength(1);
    expect(n.left?.waiting).toEqual([
      expect.objectContaining({
        label: 'webhook https://alerts.example.com',
        waiting: 1,
        oldest: expect.objectContaining({ lastError: 'aborted' }),
      }),
    ]);
    expect(rows(store).map((r) => r.delivered)).toEqual([true, false]);
  });

  it('after a lost lease sends the last events once, writing nothing', async () => {
    const { store, run } = setup([webhook(['lease.lost', 'run.finished'])]);
    const sender = scriptedSender();
    const last: RunEventBody[] = [
      { type: 'lease.lost', holder: { pid: 9, host: 'other' } },
      { type: 'run.finished', outcome: 'leaseLost', exitCode: 5, error: null, quarantined: null },
    ];
    const n = notifier(sender, last);
    n.started!(run());
    // Another runner takes the lock over: every write of this connection is fenced from now on.
    store['db'].prepare('UPDATE lock SET generation = generation + 1').run();
    const before = store.notifications.lastSeq();
    n.ended({ error: new Error('lost') });
    await n.stopped!();
    expect(types(sender.got)).toEqual([`lease.lost#${before + 1}`, `run.finished#${before + 2}`]);
    expect(store.notifications.lastSeq()).toBe(before);
    expect(n.left).toEqual({ waiting: [], unrecorded: true });
  });

  it('sends nothing in a dry run', async () => {
    const { store, clock, run } = setup([webhook(['move.quarantined'])], { dryRun: true });
    const sender = scriptedSender();
    const n = notifier(sender);
    quarantine(store, 1, clock.now());
    n.started!(run());
    await n.stopped!();
    expect(sender.got).toEqual([]);
    expect(rows(store)).toEqual([]);
  });
});

describe('the lines for people', () => {
  const at = { v: 1 as const, seq: 1, at: '2026-11-23T22:00:01.204Z' };
  it.each([
    [
      {
        ...at,
        type: 'run.paused',
        by: 'breaker',
        reason:
          "paused by the failure breaker: 20 moves failed within 15m (retry.pause_after); each with GitLab's error message under \"Failed moves\" in shardmove status p.yaml --state 'a b.db', then shardmove control p.yaml --state 'a b.db' --unpause",
      },
      "shardmove p on h: PAUSED by the failure breaker: 20 moves failed within 15m; `shardmove control p.yaml --state 'a b.db' --unpause` goes on",
    ],
    [
      {
        ...at,
        type: 'run.paused',
        by: 'breaker',
        reason: 'paused by the failure breaker: 20 moves failed within 15m (retry.pause_after); ...',
      },
      'shardmove p on h: PAUSED by the failure breaker: 20 moves failed within 15m; `shardmove control PLAN --unpause` goes on',
    ],
    [
      { ...at, type: 'run.paused', by: 'window', reason: 'outside every window', until: '2026-11-30T21:00:00.000Z' },
      'shardmove p on h: WAITING for a maintenance window until 2026-11-30T21:00:00.000Z',
    ],
    [
      {
        ...at,
        type: 'run.finished',
        outcome: 'failed',
        exitCode: 1,
        error: { code: 'SHARDMOVE_API_UNREACHABLE', message: 'no answer' },
        quarantined: null,
      },
      'shardmove p on h: run finished failed (exit 1): no answer (SHARDMOVE_API_UNREACHABLE)',
    ],
    [
      {
        ...at,
        type: 'move.failed',
        kind: 'projects',
        source: 'nfs-1',
        id: 5,
        moveId: 9,
        error: 'bad\u001b[2J\nline',
        class: 'unknown',
      },
      'shardmove p on h: projects 5 on nfs-1: move 9 failed (unknown): bad\\u001b[2J line',
    ],
  ])('%o', (event, line) => {
    expect(eventLine({ plan: 'p', host: 'h' }, RunEventSchema.parse(event))).toBe(line);
  });

  it("escapes Slack's control characters", () => {
    expect(slackText('a <!channel> & <@U1>')).toBe('a &lt;!channel&gt; &amp; &lt;@U1&gt;');
  });
});

describe('the delivery decisions', () => {
  it('backs off from 1s, doubling, to at most 5 minutes', () => {
    expect([1, 2, 3, 4, 9, 10, 50].map(backoffMs)).toEqual([
      1_000,
      2_000,
      4_000,
      8_000,
      256_000,
      BACKOFF_MAX_MS,
      BACKOFF_MAX_MS,
    ]);
  });

  it.each([
    [200, true, false],
    [204, true, false],
    [301, false, true],
    [307, false, true],
    [400, false, true],
    [401, false, true],
    [404, false, true],
    [408, false, false],
    [425, false, false],
    [429, false, false],
    [500, false, false],
    [503, false, false],
  ])('HTTP %i: delivered %s, given up %s', (status, ok, permanent) => {
    const r = httpResult(status, null, '');
    expect(r.ok).toBe(ok);
    if (!r.ok) expect(r.permanent).toBe(permanent);
  });

  it('says where a redirect pointed, by its origin only', () => {
    const r = httpResult(302, 'https://elsewhere.example/collect?key=abc', '');
    expect(r).toMatchObject({ ok: false, permanent: true });
    expect(!r.ok && r.error).toContain('https://elsewhere.example');
    expect(!r.ok && r.error).not.toContain('key=abc');
  });

  it.each([
    ['ENOENT', true],
    ['EACCES', true],
    ['ENOEXEC', true],
    ['EMFILE', false],
  ])('a command that cannot start with %s is given up: %s', (code, permanent) => {
    expect(spawnResult(code, 'spawn failed')).toMatchObject({ ok: false, permanent });
  });

  it('names every public event but progress as one a target may ask for', () => {
    expect(NOTIFY_EVENTS).not.toContain('progress');
    expect(NOTIFY_EVENTS).toContain('run.paused');
    expect(NOTIFY_EVENTS).toContain('lease.lost');
  });
});
