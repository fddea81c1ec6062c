/**
 * Content verification (plan `verify: {content: {sample: ...}}`) end to end: a sandbox whose
 * project 3 carries the seeded content_drift fault (its move loses the newest commit and tag
 * although GitLab's checksum passed). With every project sampled, the run moves everything, then
 * fails verification (exit 1) naming project 3 with both values; the others are equal. With a
 * sample, only the sampled projects are read (the same ones on every resume) and a dry run reads none.
 *
 * On the in-process harness (./support/sim-harness.ts): the sandbox and every command in this
 * process on one simulated clock, over real HTTP, so polls and move durations cost no real seconds.
 * Nothing here is about the process boundary (exit codes are those `runCommandLine` maps).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { inContentSample } from '../src/actors/drain/content.js';
import { openCheckpoint } from '../src/store/checkpoint.js';
import { sandboxEnv, storagesOf, tempDir, writePlan, writeSeed } from './support/cli-harness.js';
import { startSimulation } from './support/sim-harness.js';

/** The output with its wrapped lines joined again: an assertion reads a sentence, not where a terminal broke it. */
const flat = (text: string) => text.replace(/\n +/g, ' ');

async function setup(sample: string, mode: 'throttled' | 'bulk' = 'throttled') {
  const dir = tempDir('content');
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const seed = writeSeed(dir, { projects: 0, snippets: 0, groups: 0 });
  const projects = Array.from({ length: 12 }, (_, i) => i + 1)
    .map(
      (id) =>
        `    - { id: ${id}, storage: nfs-1, branches: ${1 + (id % 3)}, tags: 3${id === 3 ? ', content_drift: true' : ''} }`,
    )
    .join('\n');
  writeFileSync(seed, readFileSync(seed, 'utf8').replace('inventory:\n', `inventory:\n  projects:\n${projects}\n`));
  const sandbox = await startSimulation({ seed, moveDurationMs: 20 });
  const plan = writePlan(dir, { from: ['nfs-1'], mode });
  writeFileSync(
    plan,
    readFileSync(plan, 'utf8')
      .replace('kinds: [projects, snippets, groups]', 'kinds: [projects]')
      .replace('verify: true', `verify: { content: { sample: ${sample} } }`),
  );
  return { dir, plan, env: sandboxEnv(sandbox.url), url: sandbox.url, runCli: sandbox.shardmove };
}

/** How the summary names the drifted project, with both values. */
const DRIFT =
  /projects 3 \(group-1\/project-3\): its content differs after its move: HEAD of main [0-9a-f]{12} -> [0-9a-f]{12}; tags 3 -> 2/;

describe('verify.content', { timeout: 120_000 }, () => {
  it('every project sampled: the drifted one fails verification with both values; the rest are equal', async () => {
    const { dir, plan, env, url, runCli } = await setup('all');
    const r = await runCli(['run', plan], { cwd: dir, env });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    // Everything moved: the failure is the content, not a leftover.
    expect([...(await storagesOf(url, 'projects')).values()].every((s) => s === 'cluster')).toBe(true);
    expect(r.stdout).toContain('Verification: FAILED');
    expect(flat(r.stdout)).toMatch(DRIFT);
    expect(flat(r.stdout)).toContain(
      'Content of every moved project: 12 compared before and after their moves: 11 equal, 1 different, 0 not compared',
    );
    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    try {
      const checked = store.eventsOf(['content.checked'], 0, 100);
      expect(checked).toHaveLength(12);
      const three = checked.find((e) => e.data.id === 3)!.data;
      expect(three.before?.tags).toBe(3);
      expect(three.after?.tags).toBe(2);
      expect(three.before?.head).not.toBe(three.after?.head);
    } finally {
      store.close();
    }
  });

  it('a reviewed list (--only) compares the content too: the drifted project fails its verification', async () => {
    const { dir, plan, env, runCli } = await setup('all');
    const dry = await runCli(['run', plan, '--dry-run', '--items', 'list.jsonl'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const r = await runCli(['run', plan, '--only', 'list.jsonl'], { cwd: dir, env });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain('Verification: FAILED');
    expect(flat(r.stdout)).toMatch(DRIFT);
    expect(flat(r.stdout)).toContain(
      'Content of every moved project: 12 compared before and after their moves: 11 equal, 1 different, 0 not compared',
    );
  });

  it('a bulk move compares the content too: the fingerprints are read before its POST', async () => {
    const { dir, plan, env, runCli } = await setup('all', 'bulk');
    const r = await runCli(['run', plan], { cwd: dir, env });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain('Verification: FAILED');
    expect(flat(r.stdout)).toMatch(DRIFT);
    expect(flat(r.stdout)).toContain(
      'Content of every moved project: 12 compared before and after their moves: 11 equal, 1 different, 0 not compared',
    );
    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    try {
      // Every reading before the bulk POST, none after it.
      const posted = store.eventsOf(['bulk.intent'], 0, 10)[0]!.seq;
      const recorded = store.eventsOf(['content.recorded'], 0, 100);
      expect(recorded).toHaveLength(12);
      for (const e of recorded) expect(e.seq).toBeLessThan(posted);
    } finally {
      store.close();
    }
  });

  it('a 50% sample reads only the sampled projects; a dry run reads none', async () => {
    const { dir, plan, env, runCli } = await setup('50%');
    const dry = await runCli(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    const r = await runCli(['run', plan], { cwd: dir, env });
    const sampled = Array.from({ length: 12 }, (_, i) => i + 1).filter((id) => inContentSample(id, 0.5));
    expect(sampled.length).toBeGreaterThan(0);
    expect(sampled.length).toBeLessThan(12);
    expect(r.code, r.stdout + r.stderr).toBe(sampled.includes(3) ? 1 : 0);
    const store = openCheckpoint(join(dir, 'state', 'it.db'), { readOnly: true });
    try {
      expect(
        store
          .eventsOf(['content.recorded'], 0, 100)
          .map((e) => e.data.id)
          .sort((a, b) => a - b),
      ).toEqual(sampled);
    } finally {
      store.close();
    }
    const dryStore = openCheckpoint(join(dir, 'state', 'it.dry-run.db'), { readOnly: true });
    try {
      expect(dryStore.eventsOf(['content.recorded'], 0, 100)).toEqual([]);
    } finally {
      dryStore.close();
    }
  });
});

describe('the content sample', () => {
  it('takes about its share of a long run of ids, the same ids every time, and all at 100%', () => {
    const ids = Array.from({ length: 100_000 }, (_, i) => i + 1);
    for (const f of [0.01, 0.05, 0.5]) {
      const n = ids.filter((id) => inContentSample(id, f)).length;
      expect(Math.abs(n / ids.length - f)).toBeLessThan(f * 0.1 + 0.002);
    }
    expect(ids.every((id) => inContentSample(id, 1))).toBe(true);
    expect(ids.filter((id) => inContentSample(id, 0.05))).toEqual(ids.filter((id) => inContentSample(id, 0.05)));
  });
});
