/**
 * Writes that create commits, refused while a repository is read-only during a move (reference §10):
 *
 * - `POST /projects/:id/repository/commits` (Commits API: branch, commit_message, actions[]), 201
 *   with a commit object;
 * - `PUT /snippets/:id` (title, description, visibility, content, file_name, files[]); a change of
 *   content or files is a commit, 200 with the snippet;
 * - `POST /groups/:id/wikis` (title, content, format): a new wiki page is a commit, 201 with the
 *   page. Group wikis are Premium/Ultimate: 404 on the free tier.
 *
 * Read-only answer: 400 `{"message":"The repository is temporarily read-only. Please try again
 * later."}`. GitLab's HTTP status for API commit writes is unconfirmed (reference §10: Git over HTTP
 * gets 403, the API probably 400); 400 is what GitLab's commit API renders for a failed Gitaly
 * pre-receive check, so the sandbox uses it.
 *
 * Who may write: administrators (effective admins, Admin Mode aware) write anything; other users
 * only items they own (`items.owner_id`). Others get 403 on public and internal items and 404 on
 * private ones (a private item they cannot see does not exist for them). Checks run in Grape's
 * order: parameters, then the item, then permissions, then the read-only flag.
 */
import { createHash } from 'node:crypto';
import type { RequestContext, Reply } from '../http/context.js';
import { isEffectiveAdmin } from '../auth/authenticate.js';
import type { Db, ItemKind, ItemRow } from '../db.js';
import { isoTime } from '../db.js';
import { READ_ONLY_MESSAGE, badRequest, forbidden, notFound } from '../http/errors.js';
import type { Router } from '../http/router.js';
import { fakeChecksum } from '../checksum.js';
import { KIND_LABEL, createAuthorLookup, itemStatements, requireGroupTier, requireItem } from './items.js';
import { requireProject } from './redirects.js';
import { commitEntity, parseCommitBody, parseSnippetBody, parseWikiBody, wikiSlug } from './write-params.js';
import { snippetEntity } from './entities.js';

const USER_WRITE = { level: 'user', write: true } as const;

export function register(router: Router): void {
  router.post('/api/v4/projects/:id/repository/commits', USER_WRITE, createProjectCommit);
  router.put('/api/v4/snippets/:id', USER_WRITE, updateSnippet);
  router.post('/api/v4/groups/:id/wikis', USER_WRITE, createWikiPage);
}

/** A commit as stored: what the entity needs. */
export interface CommitRecord {
  sha: string;
  parentSha: string | null;
  message: string;
  createdAt: string;
}

function createProjectCommit(ctx: RequestContext): Reply {
  const params = parseCommitBody(ctx.input);
  const item = writableItem(ctx, 'project');
  const commit = recordCommit(ctx, item, params.commit_message);
  const user = ctx.caller?.user;
  return {
    status: 201,
    body: commitEntity(commit, {
      authorName: params.author_name ?? user?.name ?? 'Administrator',
      authorEmail: params.author_email ?? user?.email ?? 'admin@example.com',
      webUrl: `${ctx.origin}/${item.namespace ? `${item.namespace}/` : ''}${item.path}/-/commit/${commit.sha}`,
      projectId: item.id,
      additions: params.actions.length,
    }),
  };
}

function updateSnippet(ctx: RequestContext): Reply {
  const params = parseSnippetBody(ctx.input);
  const item = writableItem(ctx, 'snippet', params.changesContent);
  const db = ctx.state.db;
  const now = isoTime(ctx.state.clock.now());
  db.transaction(() => {
    if (params.title !== undefined || params.visibility !== undefined) {
      db.prepare(
        'UPDATE items SET name = coalesce(?, name), visibility = coalesce(?, visibility), updated_at = ? WHERE kind = ? AND id = ?',
      ).run(params.title ?? null, params.visibility ?? null, now, 'snippet', item.id);
    }
    if (params.changesContent) recordCommit(ctx, item, params.title ? `Update ${params.title}` : 'Update snippet');
  })();
  const fresh = itemStatements(db).byId.get('snippet', item.id) as ItemRow;
  // No admin fields here, unlike the lists: the sandbox's storage extension is only on reads.
  return {
    body: snippetEntity(
      fresh,
      { origin: ctx.origin, admin: false },
      createAuthorLookup(db)(fresh.owner_id),
      params.description ?? null,
    ),
  };
}

function createWikiPage(ctx: RequestContext): Reply {
  requireGroupTier(ctx.state.config);
  const params = parseWikiBody(ctx.input);
  const item = writableItem(ctx, 'group');
  recordCommit(ctx, item, `Create ${params.title}`);
  return {
    status: 201,
    body: {
      content: params.content,
      format: params.format,
      slug: wikiSlug(params.title),
      title: params.title,
      encoding: 'UTF-8',
    },
  };
}

/**
 * Finds the item and checks the caller may write to it. The read-only check also runs inside the
 * commit's transaction; this early one keeps the error order GitLab's (before any other effect).
 */
function writableItem(ctx: RequestContext, kind: ItemKind, needsRepository = true): ItemRow {
  // GitLab's default project scopes: hidden and pending-delete projects are not found here.
  const item =
    kind === 'project'
      ? requireProject(ctx, { scope: 'default' })
      : requireItem(ctx.state.db, kind, ctx.params.id, { scope: 'default' });
  const caller = ctx.caller;
  const admin = caller !== null && isEffectiveAdmin(ctx, caller);
  if (!admin && (caller === null || item.owner_id !== caller.user.id)) {
    if (item.visibility === 'private') throw notFound(KIND_LABEL[kind]);
    throw forbidden();
  }
  if (needsRepository && item.read_only) throw badRequest(READ_ONLY_MESSAGE);
  return item;
}

/**
 * Adds a commit, bumps the commit count and recomputes the checksum in one transaction; refuses
 * with the read-only message if a move set the flag (checked in the same transaction).
 */
export function recordCommit(ctx: RequestContext, item: ItemRow, message: string): CommitRecord {
  const db = ctx.state.db;
  const nowMs = ctx.state.clock.now();
  return db.transaction((): CommitRecord => {
    const fresh = itemStatements(db).byId.get(item.kind, item.id);
    if (!fresh) throw notFound(KIND_LABEL[item.kind]);
    if (fresh.read_only) throw badRequest(READ_ONLY_MESSAGE);
    const parent = lastSha(db, item.kind, item.id);
    const count = fresh.commit_count + 1;
    const sha = createHash('sha1')
      .update(`${item.kind}:${item.id}:${count}:${parent ?? ''}:${message}:${nowMs}`)
      .digest('hex');
    const createdAt = isoTime(nowMs);
    db.prepare('INSERT INTO commits (kind, item_id, sha, message, created_at) VALUES (?, ?, ?, ?, ?)').run(
      item.kind,
      item.id,
      sha,
      message,
      createdAt,
    );
    db.prepare('UPDATE items SET commit_count = ?, checksum = ?, updated_at = ? WHERE kind = ? AND id = ?').run(
      count,
      fakeChecksum(item.kind, item.id, count),
      createdAt,
      item.kind,
      item.id,
    );
    return { sha, parentSha: parent, message, createdAt };
  })();
}

function lastSha(db: Db, kind: ItemKind, id: number): string | null {
  const row = db
    .prepare('SELECT sha FROM commits WHERE kind = ? AND item_id = ? ORDER BY id DESC LIMIT 1')
    .get(kind, id) as { sha: string } | undefined;
  return row?.sha ?? null;
}
