// GET /groups?repository_storage= by release: declared from 16.3 (docs "Introduced in GitLab 16.3",
// issue 419643). Before it Grape drops the undeclared parameter and an administrator gets every
// group, unfiltered; the sandbox applied the filter on every release.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { callSandbox } from './support/sandbox-call.js';

const running: RunningSandbox[] = [];
afterEach(async () => {
  for (const sb of running.splice(0)) await sb.close();
});

async function start(version: string): Promise<RunningSandbox> {
  const seed = structuredClone(loadSeed());
  seed.instance = { ...seed.instance, version, edition: 'ee', tier: 'ultimate' } as Seed['instance'];
  seed.inventory = { generate: { ...seed.inventory.generate!, projects: 3, snippets: 1, groups: 6 } };
  const sb = await startSandbox({ seed });
  running.push(sb);
  return sb;
}

const storagesOf = (body: unknown) => (body as { repository_storage: string }[]).map((g) => g.repository_storage);

describe('the group repository_storage filter by release', () => {
  for (const version of ['15.11.0', '16.2.0']) {
    it(`is ignored on ${version}: every group is listed, whatever the storage asked for`, async () => {
      const sb = await start(version);
      const all = await callSandbox(sb, 'GET', '/groups?per_page=100');
      expect(all.body.length).toBe(6);
      const filtered = await callSandbox(sb, 'GET', '/groups?per_page=100&repository_storage=no-such-storage');
      expect(filtered.status).toBe(200);
      expect(filtered.body.map((g) => g.id)).toEqual(all.body.map((g) => g.id));
      // Not even read: a value the declared parameter would refuse is no error either.
      expect((await callSandbox(sb, 'GET', '/groups?repository_storage[]=x')).status).toBe(200);
    });
  }

  it('applies from 16.3', async () => {
    const sb = await start('16.3.0');
    const all = await callSandbox(sb, 'GET', '/groups?per_page=100');
    const storage = storagesOf(all.body)[0] as string;
    const filtered = await callSandbox(sb, 'GET', `/groups?per_page=100&repository_storage=${storage}`);
    expect(filtered.body.length).toBeGreaterThan(0);
    expect(new Set(storagesOf(filtered.body))).toEqual(new Set([storage]));
    expect((await callSandbox(sb, 'GET', '/groups?repository_storage=no-such-storage')).body).toEqual([]);
  });
});
