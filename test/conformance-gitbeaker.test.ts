// Conformance: the sandbox driven by an independent GitLab client from npm (@gitbeaker/rest).
// A failure here is a bug in the sandbox, never a reason to special-case the client.
import { Gitlab } from '@gitbeaker/rest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';
import { until } from './support/until.js';

const ADMIN = 'glpat-sandbox-root-api-sudo-0001';
const ALICE = 'glpat-sandbox-alice-api-00000006';

type Json = Record<string, unknown>;
type Api = InstanceType<typeof Gitlab>;

function seed(): Seed {
  const s = loadSeed();
  const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  s.inventory = {
    projects: [
      ...ids(12).map((id) => ({
        id,
        storage: id <= 7 ? 'nfs-1' : 'nfs-2',
        visibility: id % 3 === 0 ? ('public' as const) : ('private' as const),
      })),
      // Inventory fidelity: a hidden and a pending-delete project, which GitLab lists only on request.
      { id: 13, storage: 'nfs-1', hidden: true },
      { id: 14, storage: 'nfs-1', pending_delete: true },
    ],
    snippets: [
      ...ids(4).map((id) => ({ id, storage: 'nfs-1' })),
      // Alice's public personal snippet, on a storage the bulk moves below leave alone.
      { id: 5, storage: 'nfs-2', author: 'alice', visibility: 'public' as const },
    ],
    groups: ids(4).map((id) => ({ id, storage: 'nfs-1' })),
  };
  return s;
}

const FINAL = ['finished', 'failed', 'cleanup failed'];

describe('conformance with @gitbeaker/rest', () => {
  let sb: RunningSandbox;
  let api: Api;
  beforeAll(async () => {
    sb = await startSandbox({ seed: seed(), moveDurationMs: 30 });
    api = new Gitlab({ host: sb.url, token: ADMIN });
  });
  afterAll(async () => {
    await sb.close();
  });

  describe('listing projects by storage', () => {
    it('follows offset pages and sees repository_storage as an admin', async () => {
      const projects = (await api.Projects.all({ repositoryStorage: 'nfs-1', perPage: 2 })) as Json[];
      expect(projects.map((p) => p.id).sort((a, b) => Number(a) - Number(b))).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(projects.every((p) => p.repository_storage === 'nfs-1')).toBe(true);
      const expanded = await api.Projects.all({
        pagination: 'offset',
        repositoryStorage: 'nfs-2',
        perPage: 2,
        page: 1,
        showExpanded: true,
      });
      expect(expanded.paginationInfo).toMatchObject({ total: 5, totalPages: 3, current: 1, next: 2, perPage: 2 });
    });

    it('follows keyset pages through Link rel="next"', async () => {
      const projects = (await api.Projects.all({
        pagination: 'keyset',
        orderBy: 'id',
        sort: 'asc',
        perPage: 3,
        repositoryStorage: 'nfs-2',
      })) as Json[];
      expect(projects.map((p) => p.id)).toEqual([8, 9, 10, 11, 12]);
    });

    it('shows a non-admin the unfiltered list without storage fields', async () => {
      const alice = new Gitlab({ host: sb.url, token: ALICE });
      const projects = (await alice.Projects.all({ repositoryStorage: 'nfs-1', perPage: 100 })) as Json[];
      expect(projects.map((p) => p.id).sort((a, b) => Number(a) - Number(b))).toEqual([3, 6, 9, 12]);
      expect(projects.some((p) => 'repository_storage' in p)).toBe(false);
      expect(await alice.Projects.show(9)).toMatchObject({ id: 9, path_with_namespace: 'group-1/project-9' });
      await expect(alice.Projects.show(1)).rejects.toThrow('404 Project Not Found');
    });
  });

  describe('hidden and pending-delete projects', () => {
    it('lists them only with includeHidden / includePendingDelete, and shows neither', async () => {
      const byDefault = (await api.Projects.all({ repositoryStorage: 'nfs-1', perPage: 100 })) as Json[];
      expect(byDefault.map((p) => p.id)).not.toContain(13);
      expect(byDefault.map((p) => p.id)).not.toContain(14);
      const all = (await api.Projects.all({
        repositoryStorage: 'nfs-1',
        perPage: 100,
        includeHidden: true,
        includePendingDelete: true,
      } as never)) as Json[];
      expect(all.map((p) => p.id)).toEqual(expect.arrayContaining([13, 14]));
      await expect(api.Projects.show(13)).rejects.toThrow('404 Project Not Found');
      await expect(api.Projects.show(14)).rejects.toThrow('404 Project Not Found');
    });

    it('still moves them', async () => {
      const move = (await api.ProjectRepositoryStorageMoves.schedule('nfs-1', {
        projectId: 13,
        destinationStorageName: 'nfs-2',
      } as never)) as Json;
      expect(move).toMatchObject({ project: { id: 13 }, destination_storage_name: 'nfs-2' });
    });

    it('shows no repository_read_only on any entity', async () => {
      expect(await api.Projects.show(1)).not.toHaveProperty('repository_read_only');
      expect(await api.Snippets.show(1)).not.toHaveProperty('repository_read_only');
      expect(await api.Groups.show(1)).not.toHaveProperty('repository_read_only');
    });
  });

  describe('repository storage moves', () => {
    const kinds = [
      { name: 'project', resource: () => api.ProjectRepositoryStorageMoves, idKey: 'projectId', nested: 'project' },
      { name: 'snippet', resource: () => api.SnippetRepositoryStorageMoves, idKey: 'snippetId', nested: 'snippet' },
      { name: 'group', resource: () => api.GroupRepositoryStorageMoves, idKey: 'groupId', nested: 'group' },
    ] as const;

    for (const kind of kinds) {
      it(`schedules and reads a ${kind.name} move`, async () => {
        const r = kind.resource() as unknown as {
          schedule(source: string, o: Json): Promise<Json>;
          show(id: number, o?: Json): Promise<Json>;
          all(o?: Json): Promise<Json[]>;
        };
        const move = await r.schedule('nfs-1', { [kind.idKey]: 2, destinationStorageName: 'cluster' });
        expect(move).toMatchObject({ source_storage_name: 'nfs-1', destination_storage_name: 'cluster' });
        expect(move[kind.nested]).toMatchObject({ id: 2 });
        const id = move.id as number;
        const done = await until(
          () => r.show(id, { [kind.idKey]: 2 }),
          (m) => FINAL.includes(m.state as string),
        );
        expect(done.state).toBe('finished');
        expect(await r.show(id)).toMatchObject({ id, state: 'finished' });
        expect((await r.all({ [kind.idKey]: 2 })).map((m) => m.id)).toContain(id);
        expect((await r.all()).map((m) => m.id)).toContain(id);
      });
    }

    it('schedules a whole storage (202) and the moves appear', async () => {
      const accepted = await api.SnippetRepositoryStorageMoves.schedule('nfs-1', {
        destinationStorageName: 'nfs-2',
        showExpanded: true,
      });
      expect(accepted).toMatchObject({ status: 202, data: { message: '202 Accepted' } });
      const moves = await until(
        async () => (await api.SnippetRepositoryStorageMoves.all({ perPage: 100 })) as Json[],
        (all) => all.filter((m) => m.destination_storage_name === 'nfs-2').length >= 3,
      );
      // Snippet 2 went to cluster above; the other three were still on nfs-1.
      expect(
        moves
          .filter((m) => m.destination_storage_name === 'nfs-2')
          .map((m) => (m.snippet as Json).id)
          .sort(),
      ).toEqual([1, 3, 4]);
    });

    it('reports scheduling errors as request errors', async () => {
      await expect(
        api.ProjectRepositoryStorageMoves.schedule('nfs-1', { projectId: 3, destinationStorageName: 'nowhere' }),
      ).rejects.toThrow();
      const alice = new Gitlab({ host: sb.url, token: ALICE });
      await expect(alice.ProjectRepositoryStorageMoves.all()).rejects.toThrow('403 Forbidden');
    });
  });

  describe('snippets, Geo and project statistics (routes real clients call)', () => {
    it("lists the caller's own snippets with Snippets.all, and public personal ones with { public: true }", async () => {
      const own = (await api.Snippets.all()) as Json[];
      expect(own.map((s) => s.id)).toEqual([4, 3, 2, 1]);
      const alice = new Gitlab({ host: sb.url, token: ALICE });
      expect(((await alice.Snippets.all()) as Json[]).map((s) => s.id)).toEqual([5]);
      const pub = (await api.Snippets.all({ public: true })) as Json[];
      expect(pub.map((s) => s.id)).toContain(5);
      expect(pub.every((s) => s.visibility === 'public' && s.project_id === null)).toBe(true);
      const paged = await api.Snippets.all({ perPage: 2, showExpanded: true, maxPages: 1 } as never);
      expect((paged as unknown as { paginationInfo: Json }).paginationInfo).toMatchObject({ total: 4, next: 2 });
    });

    it('shows the clone URLs of a snippet repository', async () => {
      const snippet = (await api.Snippets.show(5)) as Json;
      expect(snippet).toMatchObject({
        ssh_url_to_repo: `git@${new URL(sb.url).hostname}:snippets/5.git`,
        http_url_to_repo: `${sb.url}/snippets/5.git`,
      });
    });

    it('reads Geo sites and the older Geo nodes, their statuses one by one', async () => {
      const sites = (await api.GeoSites.all()) as Json[];
      const nodes = (await api.GeoNodes.all()) as Json[];
      expect(sites.map((s) => s.id)).toEqual([1, 2]);
      expect(nodes.map((n) => n.id)).toEqual([1, 2]);
      expect(await api.GeoSites.show(2)).toMatchObject({ id: 2, primary: false });
      expect(await api.GeoNodes.show(2)).toMatchObject({ id: 2, primary: false, clone_protocol: 'http' });
      expect(await api.GeoSites.showStatus(2)).toMatchObject({ geo_node_id: 2, healthy: true });
      expect(await api.GeoNodes.showStatus(2)).toMatchObject({ geo_node_id: 2, healthy: true });
      // gitbeaker's allStatuses asks for /geo_*/statuses, which GitLab does not route: its Integer
      // `:id` refuses `statuses`. GitLab's list of statuses is /geo_*/status.
      await expect(api.GeoSites.allStatuses()).rejects.toThrow('id is invalid');
      await expect(api.GeoNodes.allStatuses()).rejects.toThrow('id is invalid');
    });

    it('shows project statistics with every field GitLab has, and the fetch statistics', async () => {
      const project = (await api.Projects.show(1, { statistics: true } as never)) as Json;
      expect(project.statistics).toMatchObject({ pipeline_artifacts_size: 0, container_registry_size: 0 });
      expect(await api.ProjectStatistics.show(1)).toEqual({ fetches: { total: 0, days: [] } });
      const listed = (await api.Projects.all({ statistics: true, perPage: 2, maxPages: 1 } as never)) as Json[];
      expect(listed[0]?.statistics).toHaveProperty('container_registry_size', 0);
    });
  });

  describe('sudo', () => {
    it('acts as another user with the sudo option, per client or per request', async () => {
      const asAlice = new Gitlab({ host: sb.url, token: ADMIN, sudo: 'alice' });
      expect(await asAlice.Users.showCurrentUser()).toMatchObject({ username: 'alice' });
      expect(await api.Users.showCurrentUser({ sudo: 3 })).toMatchObject({ username: 'bob' });
      const projects = (await asAlice.Projects.all({ repositoryStorage: 'nfs-1', perPage: 100 })) as Json[];
      expect(projects.some((p) => 'repository_storage' in p)).toBe(false);
      await expect(new Gitlab({ host: sb.url, token: ALICE, sudo: 'root' }).Users.showCurrentUser()).rejects.toThrow(
        '403',
      );
    });
  });

  describe('application settings', () => {
    it('shows and edits repository_storages_weighted', async () => {
      expect(await api.ApplicationSettings.show()).toMatchObject({ repository_storages_weighted: { default: 100 } });
      const edited = await api.ApplicationSettings.edit({
        repositoryStoragesWeighted: { cluster: 100, default: 0 },
      } as never);
      expect(edited).toMatchObject({ repository_storages_weighted: { cluster: 100, default: 0 } });
      expect((await api.ApplicationSettings.show()).repository_storages_weighted).toEqual({ cluster: 100, default: 0 });
      await expect(
        api.ApplicationSettings.edit({ repositoryStoragesWeighted: { nowhere: 5 } } as never),
      ).rejects.toThrow("can't include: nowhere");
    });
  });
});

describe('conformance with @gitbeaker/rest: a Community Edition instance', () => {
  let sb: RunningSandbox;
  let api: Api;
  beforeAll(async () => {
    const s = seed();
    s.instance = { ...s.instance, edition: 'ce', tier: 'free' };
    // CE has no hidden projects: keep only the plain ones and a pending-delete project.
    s.inventory.projects = (s.inventory.projects ?? []).filter((p) => !('hidden' in p));
    sb = await startSandbox({ seed: s, moveDurationMs: 30 });
    api = new Gitlab({ host: sb.url, token: ADMIN });
  });
  afterAll(async () => {
    await sb.close();
  });

  it('says it is not enterprise in /metadata', async () => {
    expect(await api.Metadata.show()).toMatchObject({ enterprise: false });
  });

  it('shows a snippet without repository_storage, even to an administrator', async () => {
    // gitbeaker has no call for GET /snippets/all; the single snippet shows the same entity.
    const snippet = (await api.Snippets.show(1)) as Json;
    expect(snippet).toMatchObject({ id: 1 });
    expect(snippet).not.toHaveProperty('repository_storage');
  });

  it("lists the caller's own and public snippets there too (GET /snippets is no edition signal)", async () => {
    expect(((await api.Snippets.all()) as Json[]).map((s) => s.id)).toEqual([4, 3, 2, 1]);
    expect(((await api.Snippets.all({ public: true })) as Json[]).map((s) => s.id)).toContain(5);
  });

  it('has no Geo API at all', async () => {
    await expect(api.GeoNodes.all()).rejects.toThrow('404');
    await expect(api.GeoSites.all()).rejects.toThrow('404');
  });

  it('has no group repository storage moves', async () => {
    await expect(api.GroupRepositoryStorageMoves.all()).rejects.toThrow('404');
  });

  it('moves a whole storage of snippets in bulk, and the move records name each snippet', async () => {
    await api.SnippetRepositoryStorageMoves.schedule('nfs-1', { destinationStorageName: 'cluster' } as never);
    const moves = await until(
      async () => (await api.SnippetRepositoryStorageMoves.all()) as Json[],
      (ms) => ms.length === 4 && ms.every((m) => FINAL.includes(String(m.state))),
    );
    expect(moves.map((m) => (m.snippet as Json).id).sort()).toEqual([1, 2, 3, 4]);
    expect(moves.every((m) => m.source_storage_name === 'nfs-1' && m.destination_storage_name === 'cluster')).toBe(
      true,
    );
  });
});
