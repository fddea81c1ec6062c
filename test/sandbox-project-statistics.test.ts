// Project statistics as GitLab's ProjectStatistics entity has them (lib/api/entities/project_statistics.rb):
// `pipeline_artifacts_size` on every release the sandbox models (exposed in 2021, MR 72075), and
// `container_registry_size` from 16.9 (MR 143331, February 2024; the release is inferred). The
// sandbox showed neither.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';

const running: RunningSandbox[] = [];
afterEach(async () => {
  for (const sb of running.splice(0)) await sb.close();
});

async function start(version: string): Promise<RunningSandbox> {
  const seed = structuredClone(loadSeed());
  seed.instance = { ...seed.instance, version };
  seed.inventory = { projects: [{ id: 1, storage: 'nfs-1', size_mb: 2 }] };
  const sb = await startSandbox({ seed });
  running.push(sb);
  return sb;
}

/** GitLab's fields in GitLab's order, up to `uploads_size`. */
const BEFORE_16_9 = [
  'commit_count',
  'storage_size',
  'repository_size',
  'wiki_size',
  'lfs_objects_size',
  'job_artifacts_size',
  'pipeline_artifacts_size',
  'packages_size',
  'snippets_size',
  'uploads_size',
];

describe('project statistics per release', () => {
  for (const [version, fields] of [
    ['15.11.0', BEFORE_16_9],
    ['16.8.0', BEFORE_16_9],
    ['16.9.0', [...BEFORE_16_9, 'container_registry_size']],
    ['17.11.0', [...BEFORE_16_9, 'container_registry_size']],
  ] as const) {
    it(`${version}: ${fields.at(-1)} last, in GitLab's order, on the single project and in the list`, async () => {
      const sb = await start(version);
      const one = await callSandbox(sb, 'GET', '/projects/1?statistics=true');
      expect(Object.keys(one.body.statistics as object)).toEqual(fields);
      expect(one.body.statistics).toMatchObject({ repository_size: 2 * 1024 * 1024, pipeline_artifacts_size: 0 });
      const listed = await callSandbox(sb, 'GET', '/projects?statistics=true');
      expect(Object.keys((listed.body[0] as { statistics: object }).statistics)).toEqual(fields);
    });
  }
});

describe('GET /projects/:id/statistics (fetch counts, lib/api/project_statistics.rb)', () => {
  const ALICE = 'glpat-sandbox-alice-api-00000006';

  it('answers the Reporter role and administrators; 403 to others who see the project, 404 to those who do not', async () => {
    const seed = structuredClone(loadSeed());
    seed.inventory = {
      projects: [
        { id: 1, storage: 'nfs-1', visibility: 'public', members: ['alice'] },
        { id: 2, storage: 'nfs-1', visibility: 'public' },
        { id: 3, storage: 'nfs-1', visibility: 'private' },
        { id: 4, storage: 'nfs-1', visibility: 'public', hidden: true },
      ],
    };
    const sb = await startSandbox({ seed });
    running.push(sb);
    const none = { fetches: { total: 0, days: [] } };
    expect(await callSandbox(sb, 'GET', '/projects/1/statistics')).toMatchObject({ status: 200, body: none });
    expect(await callSandbox(sb, 'GET', '/projects/group-1%2Fproject-1/statistics')).toMatchObject({ status: 200 });
    expect(await callSandbox(sb, 'GET', '/projects/1/statistics', undefined, ALICE)).toMatchObject({
      status: 200,
      body: none,
    });
    expect(await callSandbox(sb, 'GET', '/projects/2/statistics', undefined, ALICE)).toMatchObject({
      status: 403,
      body: { message: '403 Forbidden' },
    });
    expect(await callSandbox(sb, 'GET', '/projects/3/statistics', undefined, ALICE)).toMatchObject({
      status: 404,
      body: { message: '404 Project Not Found' },
    });
    expect(await callSandbox(sb, 'GET', '/projects/4/statistics')).toMatchObject({ status: 404 });
    expect(await callSandbox(sb, 'GET', '/projects/1/statistics', undefined, null)).toMatchObject({ status: 401 });
  });
});
