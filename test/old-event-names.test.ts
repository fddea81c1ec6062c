/**
 * Checkpoints written before the audit log took the public names (`step.entered`, `lock.takeover`,
 * `item.quarantined`, `window.closed` with `nextOpenAt`, `run.finished` with `state`, and the retired
 * `plan.recorded`) read as they did: `status`, `report`, `twin` and `revert` give the same answers
 * for a real run's checkpoint and for its copy rewritten under the old names. The revert of the old
 * copy then runs, and is judged from the sandbox's own records. The commands and the sandbox are in
 * this process on one simulated clock (./support/sim-speedb.ts), over real HTTP.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReportData } from '../src/cli/report.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { readStatus } from '../src/runtime/status.js';
import { sandboxEnv, storagesOf, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { FakeClock } from './support/fake-clock.js';
import { SIM_START } from './support/sim-harness.js';
import { commandsOn } from './support/sim-harness.js';

/** What an older release wrote, from what this one writes: the names it had then. */
const TO_OLD_NAMES = `
  UPDATE events SET type = 'step.entered' WHERE type = 'step.started';
  UPDATE events SET type = 'lock.takeover' WHERE type = 'lock.taken_over';
  UPDATE events SET type = 'item.quarantined' WHERE type = 'move.quarantined';
  UPDATE events SET data = json_remove(json_set(data, '$.state', json_extract(data, '$.outcome')), '$.outcome')
    WHERE type = 'run.finished';
  UPDATE events SET data = json_remove(json_set(data, '$.nextOpenAt', json(json_extract(data, '$.nextOpensAt'))), '$.nextOpensAt')
    WHERE type = 'window.closed';
  INSERT INTO events (at, type, data) SELECT at, 'plan.recorded', json_object('hash', 'h', 'plan', json_object())
    FROM events WHERE type = 'run.started';
`;

/** A copy of the checkpoint `from` at `to`, its log rewritten under the old names (`names` among them). */
function oldCopy(from: string, to: string, names: string[]): void {
  const src = new Database(from, { readonly: true });
  src.prepare('VACUUM INTO ?').run(to);
  src.close();
  const db = new Database(to);
  db.exec(TO_OLD_NAMES);
  const types = db.prepare('SELECT DISTINCT type FROM events').pluck().all() as string[];
  db.close();
  expect(types).toEqual(expect.arrayContaining(names));
  expect(types).not.toContain('step.started');
}

/** Anything that names the folder the checkpoint is in, with the folder's name left out. */
const same = (value: unknown, folder: string): string => JSON.stringify(value).replaceAll(`/${folder}/`, '/X/');

describe('an old checkpoint, read by this release (one simulated clock, real HTTP)', () => {
  let sandbox: RunningSandbox;
  let dir: string;
  const clock = new FakeClock(SIM_START);
  const runCli = commandsOn(clock).shardmove;
  beforeAll(async () => {
    dir = tempDir('old-names');
    sandbox = await startSandbox({
      clock,
      seed: writeSeed(dir, { projects: 16, snippets: 3, groups: 2 }),
      workers: 10,
      moveDurationMs: 30,
      faults: { brokenItems: ['project:3'] },
    });
  });
  afterAll(async () => {
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives the same status, report, twin and revert as under the names of today', async () => {
    const plan = writePlan(dir, { concurrency: 4 });
    const env = sandboxEnv(sandbox.url);
    const before = await storagesOf(sandbox.url, 'projects');
    mkdirSync(join(dir, 'new'));
    mkdirSync(join(dir, 'old'));
    const dry = await runCli(['run', plan, '--dry-run', '--state', join('new', 'dry.db')], { cwd: dir, env });
    expect(dry.code, dry.stderr).toBe(0);
    const run = await runCli(['run', plan, '--state', join('new', 'it.db')], { cwd: dir, env });
    expect(run.code, run.stderr).toBe(3);
    // What the run did not meet: a takeover of its lock, a window that closed.
    const store = openCheckpoint(join(dir, 'new', 'it.db'));
    const at = clock.now();
    store.appendEvent(
      'lock.taken_over',
      { previous: { pid: 1, host: 'h', startedAt: at }, reason: 'dead', heartbeatAgeMs: 9 },
      at,
    );
    store.appendEvent(
      'window.closed',
      {
        cap: 0,
        ceiling: 4,
        reason: 'outside every maintenance window',
        nextOpensAt: at + 60_000,
        window: 'Sat 22:00-06:00',
      },
      at,
    );
    store.close();
    const old = ['step.entered', 'plan.recorded'];
    oldCopy(join(dir, 'new', 'dry.db'), join(dir, 'old', 'dry.db'), old);
    oldCopy(join(dir, 'new', 'it.db'), join(dir, 'old', 'it.db'), [...old, 'lock.takeover', 'item.quarantined']);

    const now = clock.now();
    const status = (folder: string) => same(readStatus(join(dir, folder, 'it.db'), now), folder);
    expect(status('old')).toBe(status('new'));
    expect(JSON.parse(status('old'))).toMatchObject({
      state: 'doneWithQuarantine',
      ended: { state: 'doneWithQuarantine' },
    });
    const report = (folder: string) => same(readReportData(join(dir, folder, 'it.db'), now, 4), folder);
    expect(report('old')).toBe(report('new'));
    expect(report('old')).toContain('finished: doneWithQuarantine');

    for (const folder of ['new', 'old']) {
      const twin = await runCli(['twin', plan, '--state', join(folder, 'dry.db'), '--out', join(folder, 'twin.yaml')], {
        cwd: dir,
      });
      expect(twin.code, twin.stderr).toBe(0);
    }
    const seed = (folder: string) => readFileSync(join(dir, folder, 'twin.yaml'), 'utf8');
    expect(seed('old')).toBe(seed('new'));

    const preview = async (folder: string) => {
      const r = await runCli(['revert', plan, '--state', join(folder, 'it.db'), '--dry-run'], { cwd: dir, env });
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.replaceAll(join(dir, folder), 'X').replaceAll(`${folder}/`, 'X/');
    };
    expect(await preview('old')).toBe(await preview('new'));

    const revert = await runCli(['revert', plan, '--state', join('old', 'it.db'), '--yes'], { cwd: dir, env });
    expect(revert.code, `${revert.stdout}${revert.stderr}`).toBe(0);
    expect(await storagesOf(sandbox.url, 'projects')).toEqual(before);
  });
});
