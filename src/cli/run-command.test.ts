import { describe, expect, it } from 'vitest';
import { runCommand } from './run.js';

describe('the command that continues a run, as a stopped run prints it', () => {
  it('names the plan, the checkpoint and the dry run, pasteable into a shell', () => {
    expect(runCommand({ plan: 'plans/retire-nfs.yaml', dryRun: false })).toBe('shardmove run plans/retire-nfs.yaml');
    expect(runCommand({ plan: 'my plans/it.yaml', state: "-it's.db", dryRun: true })).toBe(
      `shardmove run 'my plans/it.yaml' --state './-it'\\''s.db' --dry-run`,
    );
  });
});
