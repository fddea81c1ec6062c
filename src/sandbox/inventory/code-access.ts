/**
 * `read_code` on a project, as far as the entities need it (per release and tier).
 * `BasicProjectDetails` shows `default_branch`, `readme_url` and `forks_count` only to a caller with
 * `read_code` (`with_options if: user_has_access_to_project_repository?`,
 * lib/api/entities/basic_project_details.rb), so they are **absent**, not empty or 0, otherwise.
 *
 * Who has it, by the project's repository feature (`repository_access_level`): `enabled`, whoever
 * may read the project (they see its entity at all); `private` ("Only project members"),
 * administrators, the owner and members; `disabled`, nobody, administrators included (the
 * policy's `prevent` on a disabled feature wins over the administrator's `enable`).
 *
 * Every seeded project is `enabled` unless the seed says otherwise, so a page costs one query more
 * only once a restricted project exists.
 */
import type { Db } from '../db.js';
import { perDatabase } from '../db.js';

/** Who is asking: the user id (null: anonymous) and whether they act as an administrator. */
export interface CodeReader {
  userId: number | null;
  admin: boolean;
}

const anyRestricted = perDatabase((db: Db) => ({
  known:
    db.prepare("SELECT 1 FROM items WHERE kind = 'project' AND repository_access_level <> 'enabled' LIMIT 1").get() !==
    undefined,
}));

/** Restricted repository features of projects `ids`: id -> level and owner (enabled ones are left out). */
export type CodeFacts = Map<number, { level: string; ownerId: number | null }>;

/** `?, ?, ...` for `n` values. */
const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** The restricted repository features among `ids` (at most a page and its parents). */
export function readCodeFacts(db: Db, ids: readonly number[]): CodeFacts {
  const out: CodeFacts = new Map();
  if (ids.length === 0 || !anyRestricted(db).known) return out;
  const rows = db
    .prepare(
      `SELECT id, repository_access_level AS level, owner_id FROM items
       WHERE kind = 'project' AND id IN (${marks(ids.length)}) AND repository_access_level <> 'enabled'`,
    )
    .all(...ids) as { id: number; level: string; owner_id: number | null }[];
  for (const r of rows) out.set(r.id, { level: r.level, ownerId: r.owner_id });
  return out;
}

const memberOf = perDatabase((db: Db) =>
  db.prepare<[number, number], { m: number }>(
    'SELECT 1 AS m FROM project_members WHERE project_id = ? AND user_id = ?',
  ),
);

/** Whether `reader` has `read_code` on project `id` (one they may read), given its facts. */
export function canReadCode(db: Db, facts: CodeFacts, id: number, reader: CodeReader): boolean {
  const f = facts.get(id);
  if (!f) return true;
  if (f.level === 'disabled') return false;
  if (reader.admin) return true;
  if (reader.userId === null) return false;
  return f.ownerId === reader.userId || memberOf(db).get(id, reader.userId) !== undefined;
}

/** The fields `BasicProjectDetails` shows only with `read_code`. */
export const CODE_FIELDS = ['default_branch', 'readme_url', 'forks_count'] as const;

/** Removes the `read_code` fields from a rendered project entity. */
export function withoutCodeFields(entity: Record<string, unknown>): Record<string, unknown> {
  for (const f of CODE_FIELDS) delete entity[f];
  return entity;
}
