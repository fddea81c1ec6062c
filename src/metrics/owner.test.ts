import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { thisHost } from '../runtime/ownership/process.js';
import { METRICS_FILE_IN_USE } from './errors.js';
import type { MetricsOwner } from './owner.js';
import { claimMetricsFile, ownerFileOf, processStartOf } from './owner.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'shardmove-owner-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const me = { plan: 'retire', planFile: '/plans/retire.yaml', checkpoint: '/plans/state/retire.db' };

/** A live process that is not this one: the other run. */
function otherProcess(): number {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  onTestFinished(() => {
    child.kill('SIGKILL');
  });
  return child.pid!;
}

/** A pid no process has: one that just ended. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((r) => child.on('exit', r));
  return child.pid!;
}

function plant(file: string, o: Partial<MetricsOwner>): string {
  const record: MetricsOwner = {
    plan: 'other',
    planFile: '/plans/other.yaml',
    checkpoint: '/plans/state/other.db',
    pid: 1,
    host: thisHost(),
    processStart: null,
    startedAt: '2026-01-01T00:00:00.000Z',
    claim: 'theirs',
    ...o,
  };
  writeFileSync(ownerFileOf(file), JSON.stringify(record));
  return ownerFileOf(file);
}

const thrown = (f: () => unknown): { code?: unknown; message?: string } => {
  try {
    f();
  } catch (err) {
    return err as { code?: unknown; message: string };
  }
  return {};
};

describe('the keeper of a --metrics-file', () => {
  it('records this run beside the file, refuses a second claim while it lasts, and removes only its own record', () => {
    const dir = tempDir();
    const file = join(dir, 'm.prom');
    const claim = claimMetricsFile(file, me);
    const record = JSON.parse(readFileSync(ownerFileOf(file), 'utf8')) as MetricsOwner;
    expect(record).toMatchObject({ ...me, pid: process.pid, host: thisHost() });
    const second = thrown(() => claimMetricsFile(file, { ...me, plan: 'second' }, { flag: 'm.prom' }));
    expect(second.code).toBe(METRICS_FILE_IN_USE);
    expect(second.message).toContain(
      `--metrics-file m.prom is kept by another run: plan retire (plan file /plans/retire.yaml, checkpoint /plans/state/retire.db), pid ${process.pid} on ${thisHost()}`,
    );
    claim.release();
    expect(readdirSync(dir)).toEqual([]);
    // A record that is no longer this claim's (taken over) is left to its keeper.
    const again = claimMetricsFile(file, me);
    plant(file, { pid: otherProcess(), claim: 'theirs' });
    again.release();
    expect(readdirSync(dir)).toEqual(['.m.prom.owner']);
  });

  it("refuses while another live process keeps the file, naming it, and leaves that process's record", () => {
    const dir = tempDir();
    const file = join(dir, 'm.prom');
    const pid = otherProcess();
    const owner = plant(file, { pid, processStart: processStartOf(pid) });
    const before = readFileSync(owner, 'utf8');
    const err = thrown(() => claimMetricsFile(file, me));
    expect(err.code).toBe(METRICS_FILE_IN_USE);
    expect(err.message).toContain(
      `plan other (plan file /plans/other.yaml, checkpoint /plans/state/other.db), pid ${pid}`,
    );
    expect(readFileSync(owner, 'utf8')).toBe(before);
    expect(readdirSync(dir)).toEqual(['.m.prom.owner']);
  });

  it('takes over the record of a process that is gone, and of a pid now used by a later process', async () => {
    const dir = tempDir();
    const file = join(dir, 'm.prom');
    plant(file, { pid: await deadPid(), plan: 'gone' });
    const told: string[] = [];
    const claim = claimMetricsFile(file, me, { onTakeover: (o) => told.push(o.plan) });
    expect(told).toEqual(['gone']);
    expect((JSON.parse(readFileSync(ownerFileOf(file), 'utf8')) as MetricsOwner).pid).toBe(process.pid);
    claim.release();
    // The pid runs, but a process started at another time has it.
    const pid = otherProcess();
    plant(file, { pid, processStart: '1', plan: 'reused' });
    const next = claimMetricsFile(file, me, { onTakeover: (o) => told.push(o.plan) });
    expect(told).toEqual(['gone', ...(processStartOf(pid) === null ? [] : ['reused'])]);
    next.release();
  });

  it("refuses another host's record, which it cannot judge, saying how to remove it; and an unreadable one", () => {
    const dir = tempDir();
    const file = join(dir, 'm.prom');
    const owner = plant(file, { host: `not-${thisHost()}`, pid: 1 });
    const err = thrown(() => claimMetricsFile(file, me));
    expect(err.code).toBe(METRICS_FILE_IN_USE);
    expect(err.message).toContain(`or remove ${owner} if that run is gone`);
    writeFileSync(owner, '{"pid":');
    expect(thrown(() => claimMetricsFile(file, me)).message).toContain(`its owner record ${owner} cannot be read`);
  });
});
