import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createFakeApi, createManualClock, testPlan } from '../../test/support/fake-runtime-deps.js';
import { openCheckpoint } from '../store/checkpoint.js';
import type { RuntimeServices } from './types.js';
import { restoreWeights } from './weights-restore.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A real run's checkpoint that recorded `previous` before its first write. */
function recorded(previous: Record<string, number>): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sm-weights-'));
  dirs.push(dir);
  const file = join(dir, 'it.db');
  const store = openCheckpoint(file);
  store.claimMode('run');
  store.saveRun({
    planName: 'test-plan',
    planHash: 'h',
    machineVersion: 1,
    snapshot: { value: 'drain', context: { previousWeights: previous } },
  });
  store.close();
  return { dir, file };
}

function services(api: ReturnType<typeof createFakeApi>): Partial<RuntimeServices> {
  const plan = testPlan();
  return {
    loadPlan: async () => ({ plan, hash: 'h', warnings: [], file: 'plan.yaml' }) as never,
    createApi: () => api,
    clock: createManualClock(),
    isAlive: () => false,
    pid: 424242,
    host: 'test-host',
  };
}

describe('weights restore: the weights are read again under the lock', () => {
  it('refuses, writing nothing, when they changed while the change was shown', async () => {
    const { dir, file } = recorded({ 'nfs-1': 100 });
    const api = createFakeApi({ weights: { 'nfs-1': 0, cluster: 100 } });
    const outcome = restoreWeights(
      {
        planFile: 'plan.yaml',
        statePath: file,
        env: {},
        cwd: dir,
        stderr: process.stderr,
        // Someone changes the weights while the operator reads the change.
        confirm: async () => ((api.state.weights = { 'nfs-1': 0, 'nfs-2': 50, cluster: 50 }), true),
      },
      services(api),
    );
    await expect(outcome).rejects.toThrow(/weights changed while the change was shown/);
    expect(api.state.calls).not.toContain('setWeights');
    const store = openCheckpoint(file, { readOnly: true });
    expect(store.readEvents(0, 100).filter((e) => e.type === 'weights.restored')).toEqual([]);
    expect(store.readLock()).toBeNull();
    store.close();
  });

  it('an answer of no leaves the directory as it was: no lock written, no log', async () => {
    const { dir, file } = recorded({ 'nfs-1': 100 });
    const before = readdirSync(dir);
    const api = createFakeApi({ weights: { 'nfs-1': 0, cluster: 100 } });
    const outcome = await restoreWeights(
      { planFile: 'plan.yaml', statePath: file, env: {}, cwd: dir, stderr: process.stderr, confirm: async () => false },
      services(api),
    );
    expect(outcome.kind).toBe('declined');
    expect(readdirSync(dir)).toEqual(before);
    expect(api.state.calls).not.toContain('setWeights');
  });
});
