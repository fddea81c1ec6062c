/**
 * Failure classes: each failure class injected by the sandbox (`--move-failures <class>=1`) with
 * GitLab's message and end state, a real `shardmove run` against it, then `status --json`: every
 * quarantined item carries the class and its remedy. The class is judged from the sandbox's own
 * records (its moves' states and error_message, the item's read-only flag), not from ours.
 *
 * On the in-process harness (test/support/sim-harness.ts): the run, the sandbox and the stuck
 * limits' waits on one simulated clock, so a move left stuck for its limit costs no real seconds.
 * Nothing here is about the process boundary (exit codes are those `runCommandLine` maps, as the
 * executable's).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FAILURE_REMEDIES } from '../src/events/failure-class.js';
import type { FailureClass } from '../src/events/failure-class.js';
import type { InjectedFailure } from '../src/sandbox/index.js';
import { ADMIN_TOKEN, flat, sandboxEnv, tempDir, writeSeed } from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';

const PROJECTS = 3;

interface SandboxMoveRecord {
  id: number;
  state: string;
  error_message: string | null;
  project: { id: number };
}
interface ItemRecord {
  moves: SandboxMoveRecord[];
  readOnly: boolean;
}

async function get<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { 'private-token': ADMIN_TOKEN } });
  return (await res.json()) as T;
}

/** What the sandbox recorded for every project: its moves, oldest first, and its read-only flag. */
async function records(url: string): Promise<Map<number, ItemRecord>> {
  const moves = await get<SandboxMoveRecord[]>(`${url}/api/v4/project_repository_storage_moves?per_page=100`);
  const out = new Map<number, ItemRecord>();
  for (let id = 1; id <= PROJECTS; id++) {
    const item = await get<{ read_only: boolean }>(`${url}/-/sandbox/items/project/${id}`);
    out.set(id, {
      moves: moves.filter((m) => m.project.id === id).sort((a, b) => a.id - b.id),
      readOnly: item.read_only,
    });
  }
  return out;
}

/** Projects only, two attempts, short stuck limits, no size allowance. */
function writePlan(dir: string): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: classes',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      '  timeout: 10s',
      'move:',
      '  from: [nfs-1, nfs-2, default]',
      '  to: cluster',
      '  kinds: [projects]',
      '  mode: throttled',
      '  concurrency: 10',
      'weights: { cluster: 100, nfs-1: 0, nfs-2: 0, default: 0 }',
      'poll: { interval: 100ms, stuck_scheduled_after: 2s, stuck_running_after: 2s, stuck_running_per_gb: 0s }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      'verify: true',
      '',
    ].join('\n'),
  );
  return file;
}

/** What the sandbox must show for each injected class: GitLab's end state and message, and the read-only flag. */
const SANDBOX_SAYS: Record<InjectedFailure, (r: ItemRecord) => void> = {
  checksum: (r) => {
    for (const m of r.moves)
      expect(m).toMatchObject({
        state: 'failed',
        error_message: expect.stringMatching(/^Failed to verify project repository checksum from \w+ to \w+$/),
      });
    expect(r.readOnly).toBe(false);
  },
  'read-only': (r) => {
    // The one move failed without a message from `scheduled`, which has no callback: the flag stays,
    // so the second attempt was refused (no second move).
    expect(r.moves.map((m) => [m.state, m.error_message])).toEqual([['failed', null]]);
    expect(r.readOnly).toBe(true);
  },
  'lease-held': (r) => {
    expect(r.moves.map((m) => [m.state, m.error_message])).toEqual([
      ['failed', null],
      ['failed', null],
    ]);
    expect(r.readOnly).toBe(false);
  },
  'no-space': (r) => {
    for (const m of r.moves) {
      expect(m).toMatchObject({
        state: 'failed',
        error_message:
          '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2.',
      });
    }
    expect(r.readOnly).toBe(false);
  },
  'source-missing': (r) => {
    for (const m of r.moves)
      expect(m).toMatchObject({ state: 'failed', error_message: '5:invalid source repository.' });
    expect(r.readOnly).toBe(false);
  },
  'gitaly-unavailable': (r) => {
    for (const m of r.moves) expect(m).toMatchObject({ state: 'failed', error_message: expect.stringMatching(/^14:/) });
    expect(r.readOnly).toBe(false);
  },
  'stuck-queued': (r) => {
    expect(r.moves.map((m) => m.state)).toEqual(['scheduled']);
    expect(r.readOnly).toBe(true);
  },
  'stuck-running': (r) => {
    expect(r.moves.map((m) => m.state)).toEqual(['started']);
    expect(r.readOnly).toBe(true);
  },
  'tar-failed': (r) => {
    for (const m of r.moves)
      expect(m).toMatchObject({
        state: 'failed',
        error_message:
          '13:could not create repository from snapshot: creating repository: extracting snapshot: wait for tar: exit status 2.',
      });
    expect(r.readOnly).toBe(false);
  },
  timeout: (r) => {
    for (const m of r.moves) expect(m).toMatchObject({ state: 'failed', error_message: '4:Deadline Exceeded.' });
    expect(r.readOnly).toBe(false);
  },
};

/**
 * The class shardmove names for each injected one. An injected no-space ends with the same text as
 * a tar failure from 16.1 on, and this plan tells shardmove nothing of the destination's free space,
 * so it cannot tell them apart: both are a copy failure in tar (test/cli-releases.test.ts has the
 * run that knows the free space).
 */
const NAMED: Record<InjectedFailure, FailureClass> = {
  ...(Object.fromEntries(Object.keys(SANDBOX_SAYS).map((k) => [k, k])) as Record<InjectedFailure, FailureClass>),
  'no-space': 'tar-failed',
};

describe('failure classes, injected by the sandbox and named by status --json', { timeout: 60_000 }, () => {
  it.each(Object.keys(SANDBOX_SAYS) as InjectedFailure[])('%s', async (injected) => {
    const cls = NAMED[injected];
    const dir = tempDir(`class-${injected}`);
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const seed = writeSeed(dir, { projects: PROJECTS, snippets: 0, groups: 0 });
    const sim = await startSimulation({
      seed,
      moveDurationMs: 20,
      workers: 10,
      faults: { seed: 5, moveFailures: { [injected]: 1 } },
    });
    const plan = writePlan(dir);

    const run = await sim.shardmove(['run', plan, '--events', join(dir, 'events.jsonl')], {
      cwd: dir,
      env: sandboxEnv(sim.url),
    });
    expect(run.code, run.stderr).toBe(3);
    // The final report and --events name the class too (the report's lines joined: it wraps at 80 columns).
    expect(flat(run.stdout)).toContain(`${cls}: ${FAILURE_REMEDIES[cls].remedy}`);
    const events = readFileSync(join(dir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; class?: string });
    const given = events.filter((e) => e.type === 'move.quarantined');
    expect(given.length).toBeGreaterThanOrEqual(PROJECTS);
    for (const e of given) expect(e.class).toBe(cls);

    const seen = await records(sim.url);
    for (const [id, r] of seen) {
      expect(r.moves.length, `project ${id}`).toBeGreaterThan(0);
      SANDBOX_SAYS[injected](r);
    }

    const status = await sim.shardmove(['status', plan, '--json'], { cwd: dir });
    expect(status.code, status.stderr).toBe(0);
    const quarantined = (
      JSON.parse(status.stdout) as { quarantined: { id: number; class: string; remedy: string; doc: string }[] }
    ).quarantined;
    expect(quarantined.map((q) => q.id).sort()).toEqual([...seen.keys()]);
    for (const q of quarantined)
      expect(q).toMatchObject({ class: cls, remedy: FAILURE_REMEDIES[cls].remedy, doc: `docs/failures.md#${cls}` });

    const text = await sim.shardmove(['status', plan], { cwd: dir });
    expect(text.stdout).toContain(`${cls}: ${FAILURE_REMEDIES[cls].remedy}`);
  });
});
