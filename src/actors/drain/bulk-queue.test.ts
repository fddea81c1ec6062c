import { describe, expect, it } from 'vitest';
import { bulkJobQueue, judgeBulkQueue, railsCountQuery } from './bulk-queue.js';

const T = 1_700_000_000_000;
const q = (backlog: number, latency: number) => ({ backlog, latency });

describe("whether a bulk move's job may still wait in Sidekiq's queue", () => {
  it("names the job's queue by release: default from 16.0, the worker's own before, none when unknown", () => {
    expect(bulkJobQueue('snippets', '17.11.0')).toBe('default');
    expect(bulkJobQueue('groups', '16.0.0')).toBe('default');
    expect(bulkJobQueue('snippets', '15.11.3')).toBe('snippets_schedule_bulk_repository_shard_moves');
    expect(bulkJobQueue('projects', null)).toBeNull();
  });

  it('is queued while the queue holds a job as old as the POST (a second of truncation and two of clocks allowed)', () => {
    const m = { queues: { default: q(3, 7), mailers: q(0, 0) } };
    // Posted 9.5 s ago: the oldest job (7 s, truncated) could be ours within the allowance.
    expect(judgeBulkQueue(m, 'default', T - 9_500, T)).toMatchObject({ state: 'queued', queue: 'default' });
    // Posted 10 s ago: every job left is younger than ours, so ours left the queue.
    expect(judgeBulkQueue(m, 'default', T - 10_000, T)).toEqual({ state: 'left', queues: ['default'] });
    expect(judgeBulkQueue({ queues: { default: q(0, 0) } }, 'default', T, T)).toMatchObject({ state: 'left' });
  });

  it("judges every queue when the job's own is not listed (routing rules of the instance's own)", () => {
    const m = { queues: { mailers: q(0, 0), repositories: q(1, 600) } };
    expect(judgeBulkQueue(m, 'default', T - 60_000, T)).toMatchObject({ state: 'queued', queue: 'repositories' });
    expect(judgeBulkQueue(m, null, T - 700_000, T)).toEqual({ state: 'left', queues: ['mailers', 'repositories'] });
  });

  it('writes the Rails console count for the kind, the storage name quoted', () => {
    expect(railsCountQuery('snippets', 'nfs-1')).toBe("SnippetRepository.for_repository_storage('nfs-1').count");
    expect(railsCountQuery('groups', "o'brien")).toBe("GroupWikiRepository.for_repository_storage('o\\'brien').count");
  });
});
