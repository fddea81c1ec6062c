import { describe, expect, it } from 'vitest';
import { editionOf, itemLine, renderTwinSeed, storagesOf } from './seed-text.js';
import type { TwinSeedInput } from './seed-text.js';

const BASE: TwinSeedInput = {
  planName: 'retire-nfs',
  checkpointName: 'retire-nfs.dry-run.db',
  finishedAt: Date.UTC(2026, 10, 24, 22),
  version: '16.11.2-ee',
  enterprise: true,
  access: { projects: 'listing', snippets: 'listing', groups: 'listing' },
  byRecords: [],
  sources: ['nfs-1', 'nfs-2'],
  destination: 'cluster',
  weights: { default: 100, 'nfs-1': 0 },
  counts: [
    {
      kind: 'projects',
      source: 'nfs-1',
      items: 3,
      sized: 2,
      bytes: 3 * 1024 ** 3,
      maxBytes: 2 * 1024 ** 3,
      hidden: 1,
      pendingDelete: 0,
      hiddenUnknown: 0,
      pendingUnknown: 0,
    },
    {
      kind: 'projects',
      source: 'nfs-2',
      items: 2,
      sized: 2,
      bytes: 10,
      maxBytes: 6,
      hidden: 0,
      pendingDelete: 0,
      hiddenUnknown: 2,
      pendingUnknown: 2,
    },
    {
      kind: 'groups',
      source: 'nfs-2',
      items: 1,
      sized: 0,
      bytes: 0,
      maxBytes: 0,
      hidden: 0,
      pendingDelete: 0,
      hiddenUnknown: 0,
      pendingUnknown: 0,
    },
  ],
  unlistable: [7],
  estimate: { ms: 720_000, basis: 'sizes', assumptions: 'from sizes', concurrency: 10 },
  itemsFile: 'twin.items.jsonl',
};

describe("the twin's seed text", () => {
  it('carries the fork networks as explicit projects with forked_from, a root off the sources on its storage', () => {
    const member = (id: number, storage = 'nfs-1') => ({
      id,
      storage,
      sizeBytes: 5 * 2 ** 20,
      hidden: id === 3,
      pendingDelete: false,
    });
    const text = renderTwinSeed({
      ...BASE,
      networks: [
        { root: 1, rootStorage: 'nfs-1', poolBytes: 5 * 2 ** 20, members: [member(1), member(2), member(3)] },
        { root: 40, rootStorage: 'archive', poolBytes: 3 * 2 ** 30, members: [member(9, 'nfs-2')] },
        { root: 50, rootStorage: null, poolBytes: null, members: [member(51)] },
      ],
    });
    expect(text).toContain(
      '#   fork networks: 3 (5 members on the sources), each member written under inventory.projects',
    );
    expect(text).toContain('#     1 root(s) off the sources seeded on their storage');
    expect(text).toContain("#     1 network(s) whose root's storage is unknown");
    expect(text).toContain('  storages: ["default", "nfs-1", "nfs-2", "cluster", "archive"]');
    expect(text.split('\n').filter((l) => l.startsWith('    - '))).toEqual([
      '    - { id: 1, name: project-1, namespace: twin, storage: "nfs-1", visibility: internal, size_mb: 5 }',
      '    - { id: 2, name: project-2, namespace: twin, storage: "nfs-1", visibility: internal, size_mb: 5, forked_from: 1 }',
      '    - { id: 3, name: project-3, namespace: twin, storage: "nfs-1", visibility: internal, size_mb: 5, hidden: true, forked_from: 1 }',
      '    - { id: 9, name: project-9, namespace: twin, storage: "nfs-2", visibility: internal, size_mb: 5, forked_from: 40 }',
      '    - { id: 40, name: project-40, namespace: twin, storage: "archive", visibility: internal, size_mb: 3072 }',
    ]);
  });

  it("says what it carries, what it does not, and the dry run's estimate, above the seed", () => {
    const text = renderTwinSeed(BASE);
    expect(text).toContain(
      '#   projects on nfs-1: 3; 3.0 GiB in 2 with a size (1 unknown: seeded as 10 MB); 1 hidden; 0 pending deletion',
    );
    expect(text).toContain(
      '#   projects on nfs-2: 2; 10 B in 2 with a size; hidden unknown for 2 (no finished census: carried as not hidden); pending deletion unknown for 2 (carried as not pending)',
    );
    expect(text).toContain('#   group wikis on nfs-2: 1; sizes unknown');
    expect(text).toContain('#   1 projects whose listing page answers 500 (instance.unlistable)');
    expect(text).toContain('#   fork networks: none (the dry run recorded no project with a fork among the sources)');
    expect(text).toContain('#   - forks of forks (GitLab links them to no pool');
    expect(text).toContain('# estimate (dry run): 12m00s at 10 moves in flight (from sizes)');
    expect(text).toContain(
      [
        'instance:',
        '  version: "16.11.2-ee"',
        '  edition: ee',
        '  tier: premium',
        '  storages: ["default", "nfs-1", "nfs-2", "cluster"]',
        '  weights: { "default": 100, "nfs-1": 0 }',
        '  unlistable: [7]',
      ].join('\n'),
    );
    expect(text).toContain('  items_file: "twin.items.jsonl"\n');
  });

  it('takes the edition from /metadata and the tier from the group move probe, and says when it does not know', () => {
    expect(editionOf(false, { groups: 'unsupported' })).toMatchObject({ edition: 'ce', tier: null });
    expect(editionOf(true, { groups: 'unsupported' })).toMatchObject({ edition: 'ee', tier: 'free' });
    expect(editionOf(true, { groups: 'records' })).toMatchObject({ edition: 'ee', tier: 'free' });
    expect(editionOf(true, { groups: 'records' }, '17.11.0')).toMatchObject({ edition: 'ee', tier: 'free' });
    // Before 16.3 every tier moves group wikis by move records: the tier is not known.
    const old = editionOf(true, { groups: 'records' }, '16.2.0');
    expect(old).toMatchObject({ edition: 'ee', tier: 'ultimate' });
    expect(old.note).toContain('tier unknown (before 16.3');
    expect(editionOf(true, { groups: 'listing' })).toMatchObject({ edition: 'ee', tier: 'premium' });
    expect(editionOf(true, {}).note).toContain('tier unknown (the plan moves no group wikis');
    expect(editionOf(null, { groups: 'listing' }).note).toContain('edition unknown');
  });

  it('names kinds it could not count, and configures every storage the plan or an item names', () => {
    const text = renderTwinSeed({
      ...BASE,
      enterprise: false,
      version: null,
      weights: null,
      access: { projects: 'listing', snippets: 'records', groups: 'unsupported' },
      byRecords: [{ kind: 'snippets', source: 'nfs-1' }],
      counts: [],
      unlistable: [],
    });
    expect(text).toContain(
      '#   snippets on nfs-1: none carried (the instance does not expose their storage; the dry run could not count them)',
    );
    expect(text).toContain("#   group wikis: none (the instance cannot move them; the plan's run skips them too)");
    expect(text).not.toContain('  version:');
    expect(text).not.toContain('  tier:');
    expect(text).toContain('  edition: ce\n');
    expect(
      storagesOf({
        weights: { a: 1 },
        sources: ['b'],
        destination: 'c',
        counts: [{ ...BASE.counts[0]!, source: 'd' }],
      }),
    ).toEqual(['a', 'b', 'c', 'd']);
  });

  it('writes one JSON array per item, sizes in whole bytes', () => {
    expect(itemLine('projects', 12, '"nfs-1"', 1048576.4, true, false)).toBe('["project",12,"nfs-1",1048576,1,0]');
    expect(itemLine('groups', 3, '"a \\"b\\""', null, false, true)).toBe('["group",3,"a \\"b\\"",null,0,1]');
  });
});
