/**
 * `GET /projects/:id/storage`: where GitLab keeps a project's repository, for administrators
 * (`lib/api/projects.rb`: `authenticated_as_admin!`, then `user_project`, so hidden and
 * pending-delete projects are 404 as for `GET /projects/:id`), as the `ProjectRepositoryStorage`
 * entity renders it: `{ disk_path, project_id, repository_storage, created_at }`. `disk_path` is
 * `project.repository.disk_path`: with hashed storage, `@hashed/<h0h1>/<h2h3>/<sha256 of the id>`,
 * without `.git`; the wiki and design repositories sit beside it (`.wiki.git`, `.design.git`). On a
 * Gitaly Cluster storage it is the relative path Praefect knows, not where its replicas are.
 */
import { createHash } from 'node:crypto';
import type { RequestContext, Reply } from '../http/context.js';
import type { Router } from '../http/router.js';
import { requireProject } from './redirects.js';

/** Hashed storage's disk path of project `id` (`Storage::Hashed#disk_path`). */
export function hashedDiskPath(id: number): string {
  const hash = createHash('sha256').update(String(id)).digest('hex');
  return `@hashed/${hash.slice(0, 2)}/${hash.slice(2, 4)}/${hash}`;
}

function showStorage(ctx: RequestContext): Reply {
  const row = requireProject(ctx, { scope: 'default' });
  return {
    body: {
      disk_path: hashedDiskPath(row.id),
      project_id: row.id,
      repository_storage: row.storage,
      created_at: row.created_at,
    },
  };
}

export function register(router: Router): void {
  router.get('/api/v4/projects/:id/storage', { level: 'admin' }, showStorage);
}
