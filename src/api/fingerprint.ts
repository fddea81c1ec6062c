/**
 * A project repository's fingerprint, read through the REST API before and after its move (the
 * plan's `verify.content`): the default branch's HEAD commit, and the numbers of branches and tags.
 * Each is read from Gitaly at request time on the storage the project lives on then:
 * `GET /projects/:id/repository/branches/:default` (its `commit.id`), and the `X-Total` of the first
 * page of `.../repository/branches?per_page=1` (Gitaly's branch_count, `GitalyKeysetPager`) and of
 * `.../repository/tags?per_page=1` (the tags as one array, `Kaminari.paginate_array`).
 *
 * Not the commit count: the Commits API sends no total (`exclude_total_headers`), and
 * `statistics.commit_count` is a database figure a push refreshes and a move does not, so it would
 * compare a number with itself (docs/gitlab-behaviour.md).
 */
import type { ApiClient } from './client.js';
import { ApiHttpError } from './errors.js';

export interface RepositoryFingerprint {
  /** The project's default branch; null for an empty repository (or one the token may not read). */
  defaultBranch: string | null;
  /** The default branch's commit; null when it has none. */
  head: string | null;
  /** Branches and tags by the instance's X-Total; null when the header was not sent. */
  branches: number | null;
  tags: number | null;
}

function total(headers: Record<string, string | string[] | undefined>): number | null {
  const raw = headers['x-total'];
  const n = Number(Array.isArray(raw) ? raw[0] : raw);
  return raw === undefined || raw === '' || !Number.isSafeInteger(n) || n < 0 ? null : n;
}

async function bodyOrNull(c: ApiClient, path: string): Promise<unknown> {
  try {
    return (await c.request({ method: 'GET', path })).body;
  } catch (err) {
    if (err instanceof ApiHttpError && err.status === 404) return null;
    throw err;
  }
}

/** The fingerprint of project `id` now; null when the instance does not find the project. */
export async function readFingerprint(c: ApiClient, id: number): Promise<RepositoryFingerprint | null> {
  const project = (await bodyOrNull(c, `/projects/${id}`)) as { default_branch?: unknown } | null;
  if (project === null) return null;
  const defaultBranch = typeof project.default_branch === 'string' ? project.default_branch : null;
  const count = async (what: 'branches' | 'tags') =>
    total(
      (await c.request({ method: 'GET', path: `/projects/${id}/repository/${what}`, query: { per_page: 1 } })).headers,
    );
  const [branch, branches, tags] = await Promise.all([
    defaultBranch === null
      ? null
      : bodyOrNull(c, `/projects/${id}/repository/branches/${encodeURIComponent(defaultBranch)}`),
    count('branches'),
    count('tags'),
  ]);
  const commit = (branch as { commit?: { id?: unknown } } | null)?.commit?.id;
  return { defaultBranch, head: typeof commit === 'string' ? commit : null, branches, tags };
}

/** What differs between two fingerprints, in words (`HEAD abc12345 -> def67890`); empty when they agree. */
export function fingerprintDifferences(before: RepositoryFingerprint, after: RepositoryFingerprint): string[] {
  const out: string[] = [];
  const short = (s: string | null) => (s === null ? 'none' : s.slice(0, 12));
  if (before.defaultBranch !== after.defaultBranch)
    out.push(`default branch ${before.defaultBranch ?? 'none'} -> ${after.defaultBranch ?? 'none'}`);
  else if (before.head !== after.head)
    out.push(`HEAD of ${before.defaultBranch} ${short(before.head)} -> ${short(after.head)}`);
  if (before.branches !== null && after.branches !== null && before.branches !== after.branches)
    out.push(`branches ${before.branches} -> ${after.branches}`);
  if (before.tags !== null && after.tags !== null && before.tags !== after.tags)
    out.push(`tags ${before.tags} -> ${after.tags}`);
  return out;
}
