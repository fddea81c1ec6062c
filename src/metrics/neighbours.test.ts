import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { planLabelOf } from './metrics-file.js';
import { findSamePlanFiles } from './neighbours.js';

describe('findSamePlanFiles', () => {
  it('finds the other .prom files with series of the same plan, and nothing else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardmove-neighbours-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const series = (plan: string) =>
      `# TYPE shardmove_paused gauge\nshardmove_paused{plan="${plan.replaceAll('"', '\\"')}"} 0\n`;
    writeFileSync(join(dir, 'mine.prom'), series('retire "nfs"'));
    writeFileSync(join(dir, 'old run.prom'), series('retire "nfs"'));
    writeFileSync(join(dir, 'longer.prom'), series('retire "nfs" 2'));
    writeFileSync(join(dir, 'other.prom'), series('rebalance'));
    writeFileSync(
      join(dir, 'node.prom'),
      `# a comment naming plan="retire \\"nfs\\""\nnode_x{plan="retire \\"nfs\\""} 1\n`,
    );
    writeFileSync(join(dir, 'same.txt'), series('retire "nfs"'));
    // A symlink is not followed (a shared folder may hold anything), nor is a directory read.
    symlinkSync(join(dir, 'old run.prom'), join(dir, 'link.prom'));
    mkdirSync(join(dir, 'dir.prom'));
    // Nor a FIFO, which would block a reader for ever.
    execFileSync('mkfifo', [join(dir, 'fifo.prom')]);
    expect(findSamePlanFiles(join(dir, 'mine.prom'), 'retire "nfs"')).toEqual([join(dir, 'old run.prom')]);
    expect(findSamePlanFiles(join(dir, 'mine.prom'), 'rebalance')).toEqual([join(dir, 'other.prom')]);
    expect(findSamePlanFiles(join(dir, 'missing', 'x.prom'), 'rebalance')).toEqual([]);
  });

  it("labels a dry run's and a revert's series as their checkpoints are named, apart from the run's", () => {
    expect(planLabelOf('retire-nfs', false)).toBe('retire-nfs');
    expect(planLabelOf('retire-nfs', true)).toBe('retire-nfs.dry-run');
    expect(planLabelOf('retire-nfs', false, 'revert')).toBe('retire-nfs.revert');
  });
});
