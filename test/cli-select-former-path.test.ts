/**
 * A project named in `move.select` by a former full path (it was renamed), end to end against a
 * sandbox process: from 16.7 the instance redirects the path to the project, and the run moves it,
 * naming both paths; before, the path is unknown and pre-flight refuses at the place it is written.
 * The sandbox's own answers are checked too: 301 with a Location for a GET, 405 for anything else.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Document } from 'yaml';
import { ADMIN_TOKEN, flat, movesOf, runCli, sandboxEnv, startSeededSandbox } from './support/cli-harness.js';

function inventory(version: string, flag?: boolean) {
  return (seed: Document): void => {
    seed.setIn(['instance', 'version'], version);
    if (flag !== undefined) seed.setIn(['instance', 'feature_flags'], { api_redirect_moved_projects: flag });
    seed.setIn(['inventory', 'groups'], [{ id: 1, name: 'acme', storage: 'nfs-1', size_mb: 5 }]);
    seed.setIn(
      ['inventory', 'projects'],
      [
        { id: 7, name: 'new-name', namespace: 'acme', storage: 'nfs-1', size_mb: 5, former_paths: ['acme/old-name'] },
        { id: 8, name: 'other', namespace: 'acme', storage: 'nfs-1', size_mb: 5 },
      ],
    );
    seed.setIn(['inventory', 'snippets'], []);
  };
}

function writePlan(dir: string): string {
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: former',
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1]',
      '  to: cluster',
      '  kinds: [projects]',
      '  select: { projects: [acme/old-name] }',
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 1, backoff: 100ms }',
      '',
    ].join('\n'),
  );
  return file;
}

const OLD = '/api/v4/projects/acme%2Fold-name';
const call = (url: string, method: string, path: string) =>
  fetch(`${url}${path}`, { method, redirect: 'manual', headers: { 'private-token': ADMIN_TOKEN } });

describe('a project named by a former path', { timeout: 120_000 }, () => {
  it('17.11: the sandbox redirects a GET and refuses a POST; the run moves the project, naming both paths', async () => {
    const { sandbox, dir } = await startSeededSandbox(
      'former-17',
      { projects: 0, snippets: 0, groups: 0 },
      inventory('17.11.0'),
    );
    const get = await call(sandbox.url, 'GET', `${OLD}/repository_storage_moves?per_page=1`);
    expect(get.status).toBe(301);
    expect(get.headers.get('location')).toBe(`${sandbox.url}/api/v4/projects/7/repository_storage_moves?per_page=1`);
    const post = await call(sandbox.url, 'POST', `${OLD}/repository_storage_moves`);
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ message: 'Non GET methods are not allowed for moved projects' });
    // Groups never redirect; an unknown path stays 404.
    expect((await call(sandbox.url, 'GET', '/api/v4/groups/acme%2Fold-name')).status).toBe(404);
    expect((await call(sandbox.url, 'GET', '/api/v4/projects/acme%2Fnever')).status).toBe(404);

    const plan = writePlan(dir);
    const env = sandboxEnv(sandbox.url);
    const said = /move\.select: project 7 \(.*plan\.yaml:10:24\) was acme\/old-name, now acme\/new-name/;
    const dry = await runCli(['run', plan, '--dry-run'], { cwd: dir, env });
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(flat(dry.stdout)).toMatch(said);
    expect(flat(dry.stdout + dry.stderr)).not.toMatch(/HTTP 301/);
    const run = await runCli(['run', plan], { cwd: dir, env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(flat(run.stdout)).toMatch(said);
    expect((await movesOf(sandbox.url, 'project')).map((m) => m.itemId)).toEqual([7]);
  });

  it('16.2: the old path is a clear "no project" at file:line:col, and nothing moves', async () => {
    const { sandbox, dir } = await startSeededSandbox(
      'former-16',
      { projects: 0, snippets: 0, groups: 0 },
      inventory('16.2.0'),
    );
    expect((await call(sandbox.url, 'GET', OLD)).status).toBe(404);
    const run = await runCli(['run', writePlan(dir)], { cwd: dir, env: sandboxEnv(sandbox.url) });
    expect(run.code, run.stdout + run.stderr).toBe(2);
    expect(flat(run.stdout)).toMatch(/plan\.yaml:10:24: no project has the full path "acme\/old-name"/);
    expect(await movesOf(sandbox.url, 'project')).toEqual([]);
  });

  it('16.5: the sandbox redirects only with api_redirect_moved_projects on', async () => {
    const off = await startSeededSandbox('former-165', { projects: 0, snippets: 0, groups: 0 }, inventory('16.5.0'));
    expect((await call(off.sandbox.url, 'GET', OLD)).status).toBe(404);
    const on = await startSeededSandbox(
      'former-165-on',
      { projects: 0, snippets: 0, groups: 0 },
      inventory('16.5.0', true),
    );
    const get = await call(on.sandbox.url, 'GET', OLD);
    expect(get.status).toBe(301);
    expect(get.headers.get('location')).toBe(`${on.sandbox.url}/api/v4/projects/7`);
  });
});
