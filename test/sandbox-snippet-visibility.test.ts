// Snippet visibility, sandbox side: GET /snippets/:id looks a snippet up through GitLab's
// SnippetsFinder without `all_available`, so an administrator who is not a member gets 404 for the
// snippets of a project whose snippets feature is disabled or members-only, while /snippets/all
// lists them and the move routes (Snippet.find_by) move them.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { SeedError, loadSeed, parseSeed } from '../src/sandbox/seed.js';
import { SANDBOX_ROOT_TOKEN } from './support/sandbox-call.js';

const ALICE_TOKEN = 'glpat-sandbox-alice-api-00000006';

const running: RunningSandbox[] = [];
afterEach(async () => {
  for (const sb of running.splice(0)) await sb.close();
});

async function start(seed: Seed): Promise<RunningSandbox> {
  const sb = await startSandbox({ seed, moveDurationMs: 60_000 });
  running.push(sb);
  return sb;
}

async function get(sb: RunningSandbox, path: string, opts: { token?: string; sudo?: string } = {}) {
  const headers: Record<string, string> = { 'private-token': opts.token ?? SANDBOX_ROOT_TOKEN };
  if (opts.sudo) headers.sudo = opts.sudo;
  const res = await fetch(`${sb.url}/api/v4${path}`, { headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & Record<string, unknown>[] };
}

/** Projects with each snippets feature level; root is a member of project 3 and alice of projects 2 and 4. */
function explicitSeed(): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {
    projects: [
      { id: 1, storage: 'nfs-1', snippets_access_level: 'enabled' },
      { id: 2, storage: 'nfs-1', snippets_access_level: 'disabled', members: ['alice'] },
      { id: 3, storage: 'nfs-1', snippets_access_level: 'private', members: ['root'] },
      { id: 4, storage: 'nfs-1', snippets_access_level: 'private', members: [2] },
    ],
    snippets: [
      { id: 1, storage: 'nfs-1' },
      { id: 2, storage: 'nfs-1', project: 1 },
      { id: 3, storage: 'nfs-1', project: 2 },
      { id: 4, storage: 'nfs-1', project: 3 },
      { id: 5, storage: 'nfs-1', project: 4 },
    ],
  };
  return s;
}

describe('GET /snippets/:id and project snippets features (app/finders/snippets_finder.rb)', () => {
  it('hides from an administrator the snippets of projects with snippets disabled, or members-only without membership', async () => {
    const sb = await start(explicitSeed());
    const status = async (id: number, opts = {}) => (await get(sb, `/snippets/${id}`, opts)).status;
    // root: personal and `enabled` snippets, and the members-only project it belongs to.
    expect(await status(1)).toBe(200);
    expect(await status(2)).toBe(200);
    expect(await status(3)).toBe(404);
    expect(await status(4)).toBe(200);
    expect(await status(5)).toBe(404);
    expect((await get(sb, '/snippets/3')).body).toEqual({ message: '404 Snippet Not Found' });
    // ops-admin (another administrator, through sudo) is a member of nothing.
    expect(await status(4, { sudo: 'ops-admin' })).toBe(404);
    expect(await status(2, { sudo: 'ops-admin' })).toBe(200);
  });

  it('shows members-only snippets to members whatever their visibility, and disabled ones to nobody', async () => {
    const sb = await start(explicitSeed());
    // Every seeded snippet is private: alice sees project 4's as a member, never project 2's.
    expect((await get(sb, '/snippets/5', { token: ALICE_TOKEN })).status).toBe(200);
    expect((await get(sb, '/snippets/3', { token: ALICE_TOKEN })).status).toBe(404);
    expect((await get(sb, '/snippets/2', { token: ALICE_TOKEN })).status).toBe(404);
    const listed = (await get(sb, '/snippets/all?per_page=100', { token: ALICE_TOKEN })).body.map((x) => x.id);
    expect(listed).toEqual([5]);
  });

  it('still lists every snippet in /snippets/all for an administrator and moves the hidden ones', async () => {
    const sb = await start(explicitSeed());
    const listed = (await get(sb, '/snippets/all?per_page=100')).body;
    expect(listed.map((x) => x.id)).toEqual([5, 4, 3, 2, 1]);
    expect(listed.find((x) => x.id === 3)).toMatchObject({
      project_id: 2,
      web_url: `${sb.url}/group-1/project-2/-/snippets/3`,
      repository_storage: 'nfs-1',
    });
    const res = await fetch(`${sb.url}/api/v4/snippets/3/repository_storage_moves`, {
      method: 'POST',
      headers: { 'private-token': SANDBOX_ROOT_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ destination_storage_name: 'cluster' }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ state: 'scheduled', snippet: { id: 3, project_id: 2 } });
    expect((await get(sb, '/snippets/3/repository_storage_moves')).body).toHaveLength(1);
  });

  it('generates project snippets and feature levels from the seed fractions, leaving the rest of the inventory as it was', async () => {
    const base = structuredClone(loadSeed());
    const plain = await start(base);
    const s = structuredClone(base);
    s.inventory.generate = {
      ...s.inventory.generate!,
      project_snippet_fraction: 0.6,
      snippets_disabled_fraction: 0.3,
      snippets_private_fraction: 0.2,
    };
    const sb = await start(s);
    const rows = (db: RunningSandbox) =>
      db.state.db.prepare('SELECT kind, id, storage, size_mb, visibility FROM items ORDER BY kind, id').all();
    expect(rows(sb)).toEqual(rows(plain));
    const snippets = sb.state.db
      .prepare(
        `SELECT s.id, p.snippets_access_level AS level FROM items s LEFT JOIN items p ON p.kind = 'project' AND p.id = s.project_id
      WHERE s.kind = 'snippet' ORDER BY s.id`,
      )
      .all() as { id: number; level: string | null }[];
    const hidden = snippets.filter((x) => x.level === 'disabled' || x.level === 'private').map((x) => x.id);
    expect(snippets.filter((x) => x.level !== null).length).toBeGreaterThan(10);
    expect(hidden.length).toBeGreaterThan(2);
    for (const { id, level } of snippets) {
      expect((await get(sb, `/snippets/${id}`)).status, `snippet ${id} (${level ?? 'personal'})`).toBe(
        hidden.includes(id) ? 404 : 200,
      );
    }
    const listed = (await get(sb, '/snippets/all?per_page=100')).body.length;
    expect(listed).toBe(snippets.length);
  });
});

describe('the seed fields for project snippets', () => {
  const problems = (text: string): string[] => {
    try {
      parseSeed(text, 'seed.yaml');
      return [];
    } catch (err) {
      if (err instanceof SeedError) return err.problems;
      throw err;
    }
  };

  it('names unknown projects, unknown members, bad levels and impossible fractions', () => {
    expect(
      problems(
        [
          'users: [{ id: 1, username: root }]',
          'inventory:',
          '  generate: { projects: 2, snippets_disabled_fraction: 0.7, snippets_private_fraction: 0.5 }',
          '  projects: [{ id: 9, storage: default, members: [root, nobody, 7], snippets_access_level: public }]',
          '  snippets: [{ id: 1, storage: default, project: 3 }, { id: 2, storage: default, project: 9 }]',
          '',
        ].join('\n'),
      ),
    ).toEqual([
      'seed.yaml:3:88: inventory.generate.snippets_private_fraction: snippets_disabled_fraction + snippets_private_fraction must not exceed 1',
      'seed.yaml:4:57: inventory.projects.0.members.1: unknown user "nobody"',
      'seed.yaml:4:65: inventory.projects.0.members.2: unknown user id 7',
      'seed.yaml:4:92: inventory.projects.0.snippets_access_level: must be disabled, private or enabled',
      'seed.yaml:5:50: inventory.snippets.0.project: unknown project 3',
    ]);
    expect(problems('inventory: { generate: { snippets: 3, project_snippet_fraction: 0.5 } }\n')).toEqual([
      'seed.yaml:1:65: inventory.generate.project_snippet_fraction: project snippets need generated projects (generate.projects > 0)',
    ]);
  });
});
