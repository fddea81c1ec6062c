import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { InstanceApi, ItemRecord, KindAccessMode } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import type { MoveSelect } from '../plan/values.js';
import { codeOf } from '../shared/errors.js';
import { chooseItems, groupChosen, judgeNow, projectChosen, selectionOf, snippetChosen } from './select.js';
import { resolveSelection } from './select-resolve.js';

const entries = (...refs: (number | string)[]) => refs.map((ref, i) => ({ ref, at: `plan.yaml:${i + 1}:1` }));
const sel = (s: Partial<MoveSelect>) =>
  selectionOf({ move: { select: { namespaces: [], projects: [], exclude: [], file: null, ...s } } })!;

describe('the selection matcher', () => {
  it('takes namespaces with their subgroups, never a namespace that only starts the same', () => {
    const s = sel({ namespaces: entries('Acme') });
    expect(projectChosen(s, 1, 'acme/web')).toBe(true);
    expect(projectChosen(s, 2, 'ACME/team/api')).toBe(true);
    expect(projectChosen(s, 3, 'acmeish/x')).toBe(false);
    expect(groupChosen(s, 'acme')).toBe(true);
    expect(groupChosen(s, 'acme/team')).toBe(true);
    expect(groupChosen(s, 'acmeish')).toBe(false);
  });

  it('lets exclude win, by id or by path, and chooses everything else when it stands alone', () => {
    const s = sel({ namespaces: entries('acme'), projects: entries(9), exclude: entries(2, 'acme/team') });
    expect(projectChosen(s, 2, 'acme/web')).toBe(false);
    expect(projectChosen(s, 3, 'acme/team/api')).toBe(false);
    expect(projectChosen(s, 9, 'other/x')).toBe(true);
    expect(groupChosen(s, 'acme/team')).toBe(false);
    const rest = sel({ exclude: entries('acme') });
    expect(projectChosen(rest, 1, 'other/x')).toBe(true);
    expect(projectChosen(rest, 2, 'acme/x')).toBe(false);
    expect(snippetChosen(rest, { projectId: null, author: 'bob' }, null)).toBe(true);
  });

  it('moves a project snippet with its project and a personal one with its author, and nothing it cannot place', () => {
    const s = sel({ namespaces: entries('alice', 'acme'), projects: entries(7) });
    expect(snippetChosen(s, { projectId: 1, author: 'root' }, 'acme/web')).toBe(true);
    expect(snippetChosen(s, { projectId: 2, author: 'alice' }, 'other/site')).toBe(false);
    expect(snippetChosen(s, { projectId: 7, author: null }, null)).toBe(true);
    expect(snippetChosen(s, { projectId: 8, author: null }, null)).toBe(false);
    expect(snippetChosen(s, { projectId: null, author: 'Alice' }, null)).toBe(true);
    expect(snippetChosen(s, { projectId: null, author: 'bob' }, null)).toBe(false);
    expect(snippetChosen(s, { projectId: null, author: null }, null)).toBe(false);
    expect(snippetChosen(sel({ exclude: entries('acme') }), { projectId: 3, author: null }, null)).toBe(false);
  });

  it("reads a project snippet's project once per client, from the checkpoint first", async () => {
    const asked: number[] = [];
    const api = {
      getItem: async (_k: Kind, id: number) => {
        asked.push(id);
        return id === 5
          ? ({ kind: 'projects', id, storage: 'x', name: 'acme/five', sizeBytes: null } as ItemRecord)
          : null;
      },
    } as unknown as InstanceApi;
    const store = { getItem: (_k: Kind, id: number) => (id === 4 ? { name: 'acme/four' } : null) };
    const deps = { api, store } as never;
    const snippet = (id: number, projectId: number | null, author: string | null = null): ItemRecord => ({
      kind: 'snippets',
      id,
      storage: 'nfs-1',
      name: `s${id}`,
      sizeBytes: null,
      projectId,
      author,
    });
    const s = sel({ namespaces: entries('acme') });
    const page = [snippet(1, 4), snippet(2, 5), snippet(3, 6), snippet(4, 5), snippet(5, null, 'acme')];
    const chosen = await chooseItems(deps, s, 'snippets', page);
    expect([...chosen]).toEqual([
      [1, true],
      [2, true],
      [3, false],
      [4, true],
      [5, true],
    ]);
    await chooseItems(deps, s, 'snippets', page);
    expect(asked.sort()).toEqual([5, 6]);
  });
});

describe('judged on the current state', () => {
  const item = (kind: Kind, id: number, name: string, more: Partial<ItemRecord> = {}): ItemRecord => ({
    kind,
    id,
    name,
    storage: 'nfs-1',
    sizeBytes: null,
    ...more,
  });

  it('follows a transfer: a project, a group, and a project snippet by its project as they are now', async () => {
    const s = sel({ namespaces: entries('acme'), exclude: entries('acme/team') });
    const now: Record<string, ItemRecord> = {
      'projects:1': item('projects', 1, 'acme/team/web'),
      'projects:2': item('projects', 2, 'other/api'),
      'projects:3': item('projects', 3, 'acme/ops'),
      'groups:5': item('groups', 5, 'acme/team/docs'),
      'snippets:7': item('snippets', 7, 's', { projectId: 1, author: 'bob' }),
      'snippets:8': item('snippets', 8, 's', { projectId: 3, author: 'bob' }),
    };
    const deps = { api: { getItem: async (k: Kind, id: number) => now[`${k}:${id}`] ?? null } as never };
    expect(await judgeNow(deps, s, 'projects', 1, 'acme/web')).toEqual({
      chosen: false,
      reason: 'left the selection: now acme/team/web, excluded by acme/team',
    });
    expect(await judgeNow(deps, s, 'projects', 2, 'acme/api')).toEqual({
      chosen: false,
      reason: 'left the selection: now other/api, in none of the selected namespaces or projects',
    });
    expect((await judgeNow(deps, s, 'projects', 3, 'acme/ops')).chosen).toBe(true);
    // Not readable now (hidden): judged by what was last seen.
    expect((await judgeNow(deps, s, 'projects', 4, 'acme/x')).chosen).toBe(true);
    expect(await judgeNow(deps, s, 'groups', 5, 'acme/docs')).toEqual({
      chosen: false,
      reason: 'left the selection: the group is now acme/team/docs, excluded by acme/team',
    });
    expect(await judgeNow(deps, s, 'snippets', 7, 's')).toEqual({
      chosen: false,
      reason: 'left the selection: its project is now acme/team/web, excluded by acme/team',
    });
    expect((await judgeNow(deps, s, 'snippets', 8, 's')).chosen).toBe(true);
  });
});

describe('pre-flight: resolveSelection', () => {
  const log = pino({ level: 'silent' });
  const deps = (select: Partial<MoveSelect>, api: Partial<InstanceApi>, kinds: Kind[] = ['projects']) => ({
    api: api as InstanceApi,
    log,
    signal: new AbortController().signal,
    plan: {
      move: { kinds, from: ['nfs-1'], select: { namespaces: [], projects: [], exclude: [], file: null, ...select } },
    } as never,
  });

  it('refuses a kind the instance moves by move records, which cannot choose', async () => {
    const access: Partial<Record<Kind, KindAccessMode>> = { projects: 'listing', snippets: 'records' };
    const err = await resolveSelection(
      deps({ namespaces: entries('acme') }, {}, ['projects', 'snippets']),
      access,
    ).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('SHARDMOVE_SELECT_UNLISTABLE');
    expect((err as Error).message).toMatch(/Leave snippets out of move\.kinds/);
  });

  it('names every unknown name at its place, and says what a misplaced one is', async () => {
    const api: Partial<InstanceApi> = {
      getNamespace: async (p) => (p === 'acme' ? { id: 1, kind: 'group', fullPath: 'acme' } : null),
      findProject: async (ref) =>
        ref === 'acme/web' || ref === 3
          ? { kind: 'projects', id: 3, storage: 'nfs-1', name: 'acme/web', sizeBytes: null }
          : ref === 4
            ? 'hidden'
            : null,
    };
    const err = await resolveSelection(
      deps(
        {
          namespaces: entries('acme', 'acme/web', 'ghost'),
          projects: entries(3, 4, 'acme', 5),
          exclude: entries('nope'),
        },
        api,
      ),
      { projects: 'listing' },
    ).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('SHARDMOVE_SELECT_UNKNOWN');
    const lines = (err as Error).message.split('\n').slice(1);
    expect(lines).toEqual([
      '    plan.yaml:2:1: "acme/web" is a project, not a namespace: list it under move.select.projects',
      '    plan.yaml:3:1: no group or user has the full path "ghost"',
      '    plan.yaml:3:1: "acme" is a namespace, not a project: list it under move.select.namespaces',
      '    plan.yaml:4:1: no project has id 5',
      '    plan.yaml:1:1: no project, group or user has the full path "nope"',
    ]);
  });

  it('warns of each project named to move that is on no source, and reads a quoted all-digit name as a path', async () => {
    const asked: (number | string)[] = [];
    const api: Partial<InstanceApi> = {
      getNamespace: async (p) => (p === '2024' ? { id: 9, kind: 'group', fullPath: '2024' } : null),
      findProject: async (ref) => {
        asked.push(ref);
        return ref === 'acme/far'
          ? { kind: 'projects', id: 7, storage: 'nfs-2', name: 'acme/far', sizeBytes: null }
          : null;
      },
    };
    const warnings = await resolveSelection(
      deps({ namespaces: entries('2024'), projects: entries('acme/far'), exclude: entries('2024') }, api),
      { projects: 'listing' },
    );
    expect(warnings).toEqual([
      'move.select: "acme/far" (plan.yaml:1:1) is named but not on a source storage (on nfs-2): this run does not move it',
    ]);
    // "2024" is never asked for as a project (GET /projects/2024 would read project id 2024).
    expect(asked).toEqual(['acme/far']);
  });
});

describe('pre-flight: names that are former paths of a project', () => {
  const log = pino({ level: 'silent' });
  // The instance redirected these paths: the project read back shows its path of today.
  const api: Partial<InstanceApi> = {
    getNamespace: async () => null,
    findProject: async (ref) =>
      ref === 'acme/old' || ref === 'acme/new'
        ? { kind: 'projects', id: 7, storage: 'nfs-1', name: 'acme/new', sizeBytes: null }
        : ref === 'acme/was-api' || ref === 'ACME/API'
          ? { kind: 'projects', id: 8, storage: 'nfs-1', name: 'acme/api', sizeBytes: null }
          : null,
  };
  const run = (select: Partial<MoveSelect>) => {
    const plan = {
      move: {
        kinds: ['projects'],
        from: ['nfs-1'],
        select: { namespaces: [], projects: [], exclude: [], file: null, ...select },
      },
    };
    return {
      plan,
      warnings: resolveSelection(
        { api: api as InstanceApi, log, signal: new AbortController().signal, plan: plan as never },
        { projects: 'listing' },
      ),
    };
  };

  it('chooses the project by its id, names both paths, and excludes by id what exclude names by a former path', async () => {
    const { plan, warnings } = run({ projects: entries('acme/old'), exclude: entries('acme/was-api') });
    expect(await warnings).toEqual([
      expect.stringMatching(
        /^move\.select: project 7 \(plan\.yaml:1:1\) was acme\/old, now acme\/new: .*write acme\/new in the plan$/,
      ),
      expect.stringMatching(/^move\.select: project 8 \(plan\.yaml:1:1\) was acme\/was-api, now acme\/api/),
    ]);
    const s = selectionOf(plan)!;
    expect(projectChosen(s, 7, 'acme/new')).toBe(true);
    expect(projectChosen(s, 8, 'acme/api')).toBe(false);
    // Only exclude: everything else is chosen, the project excluded by its former path is not.
    const only = run({ exclude: entries('acme/was-api') });
    await only.warnings;
    expect(projectChosen(selectionOf(only.plan)!, 8, 'acme/api')).toBe(false);
    expect(projectChosen(selectionOf(only.plan)!, 7, 'acme/new')).toBe(true);
  });

  it('says nothing of a name that is the path of today, whatever its case', async () => {
    const { warnings } = run({ projects: entries('acme/new', 'ACME/API') });
    expect(await warnings).toEqual([]);
  });
});
