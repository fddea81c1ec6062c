import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellWord } from './command-line.js';
import { renderPreview, revertCommand } from './revert.js';

/** What /bin/sh makes of a command line: its words, one per line. */
function wordsOf(line: string): string[] {
  return execFileSync('/bin/sh', ['-c', `for w in ${line}; do printf '%s\\n' "$w"; done`], {
    encoding: 'utf8',
  })
    .split('\n')
    .slice(0, -1);
}

describe("the revert's command, as its hints print it", () => {
  it('names the plan, the forward checkpoint and the flags that decide what it does, pasteable into a shell', () => {
    expect(revertCommand({ plan: 'plans/retire-nfs.yaml', dryRun: false, yes: false })).toBe(
      'shardmove revert plans/retire-nfs.yaml',
    );
    expect(
      revertCommand({
        plan: 'my plans/it.yaml',
        state: "run state/it's.db",
        dryRun: true,
        yes: true,
        retryQuarantined: true,
        acceptPlanChange: true,
        overwriteWeights: true,
        lease: '2m',
        events: 'events.jsonl',
      }),
    ).toBe(
      `shardmove revert 'my plans/it.yaml' --state 'run state/it'\\''s.db' --accept-plan-change --overwrite-weights`,
    );
  });

  it.each([
    'plain.yaml',
    'a b.yaml',
    "it's.yaml",
    '$(rm -rf ~).yaml',
    '`id`.yaml',
    'x;y|z&.yaml',
    '*.yaml',
    'tab\there',
  ])('quotes %j so that the shell reads it back as one word, unexpanded', (word) => {
    expect(wordsOf(shellWord(word))).toEqual([word]);
  });

  it('keeps a leading dash from passing for an option', () => {
    expect(shellWord('-rf.yaml')).toBe('./-rf.yaml');
    expect(wordsOf(shellWord('--state x.yaml'))).toEqual(['./--state x.yaml']);
  });
});

describe("the revert's preview", () => {
  it('fits 80 columns for ordinary names, the later change of weights and the moves still alive included', () => {
    const text = renderPreview({
      forwardFile: 'state/retire-nfs.db',
      revertFile: 'state/retire-nfs.revert.db',
      url: 'https://gitlab.example.com',
      resuming: false,
      groups: [{ kind: 'projects', from: 'cluster', to: 'nfs-1', n: 1204 }],
      total: 1204,
      skipped: [],
      weights: [],
      laterWeights: [
        { storage: 'cluster', left: 100, now: 0, write: 0 },
        { storage: 'nfs-1', left: 0, now: 0, write: 100 },
        { storage: 'nfs-2', left: 0, now: 100, write: 0 },
      ],
      alive: [
        {
          kind: 'projects',
          id: 4411,
          name: 'infra/terraform',
          moveId: 90210,
          state: 'scheduled',
          source: 'nfs-1',
          destination: 'cluster',
        },
      ],
    });
    for (const line of text.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(text).toContain('without --overwrite-weights the revert refuses to overwrite that change');
    expect(text).toContain('project 4411 (infra/terraform): move 90210 scheduled, nfs-1 -> cluster');
  });
});
