/**
 * Fork networks in project entities, as GitLab renders them:
 *
 * - `forks_count` (BasicProjectDetails, so every project entity): the project's direct forks
 *   (`project.forks`, ForksCountService).
 * - `forked_from_project` (ProjectDetails, and so Project and ProjectWithAccess): the project it was
 *   forked from, as a BasicProjectDetails, only when the caller may read that project
 *   (`Ability.allowed?(current_user, :read_project, project.forked_from_project)`). From the release
 *   whose BasicProjectDetails exposes `repository_storage` to callers who may
 *   `change_repository_storage` (administrators), the nested parent carries it too
 *   (PARENT_STORAGE_SINCE; the release is UNSETTLED, see docs/gitlab-behaviour.md §1.5).
 * - Both entities show `forks_count` (and `default_branch`, `readme_url`) only to a caller with
 *   `read_code` on that project (./code-access.ts).
 *   `present_projects` renders lists with ProjectWithAccess for a signed-in caller and with
 *   BasicProjectDetails for an anonymous one or with `simple=true`; `GET /projects/:id` uses
 *   ProjectWithAccess, or ProjectDetails for an anonymous caller. So lists carry it for signed-in
 *   callers without `simple`, the single project for everyone who may read the parent.
 *
 * A listing page costs three small indexed queries more, and only once a fork exists in the
 * database (the sandbox has no API that creates one after seeding).
 */
import type { Db } from '../db.js';
import { prepared } from './prepared.js';
import { perDatabase } from '../db.js';
import type { EntityRow } from './entities.js';
import { ENTITY_COLUMNS, entityRowOf, projectEntity } from './entities.js';
import { atLeast, parseRelease } from '../auth/token-types.js';
import type { CodeFacts } from './code-access.js';
import { canReadCode, readCodeFacts, withoutCodeFields } from './code-access.js';

/**
 * The first release whose nested `forked_from_project` shows `repository_storage` to
 * administrators: UNSETTLED, taken as 16.5 (a client library added the field on 2023-09-27 as
 * "recently added", between the 16.4 and 16.5 releases; 16.5 certainly has it).
 */
export const PARENT_STORAGE_SINCE = [16, 5] as const;

/** Who is asking: the user id (null: anonymous) and whether they act as an administrator. */
export interface ForkViewer {
  userId: number | null;
  admin: boolean;
}

/** Whether the nested parent shows `repository_storage` to `viewer` on `version`. */
export function showsParentStorage(viewer: ForkViewer, version: string): boolean {
  return viewer.admin && atLeast(parseRelease(version), PARENT_STORAGE_SINCE);
}

const anyFork = perDatabase((db: Db) => ({
  known:
    db.prepare("SELECT 1 FROM items WHERE kind = 'project' AND forked_from IS NOT NULL LIMIT 1").get() !== undefined,
}));

/** Whether the database holds a fork at all (fixed after seeding). */
export function hasForks(db: Db): boolean {
  return anyFork(db).known;
}

/** `?, ?, ...` for `n` values. */
const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** What the fork fields of a set of projects need: their parents, the parents' rows and direct-fork counts. */
export interface ForkFacts {
  parentOf: Map<number, number>;
  parents: Map<number, EntityRow>;
  forksCount: Map<number, number>;
  /** The parents' restricted repository features (./code-access.ts). */
  parentCode: CodeFacts;
  db: Db;
  /** The instance's release (the nested parent's `repository_storage`). */
  version: string;
}

/** The fork facts of projects `ids` (at most a page of them). */
export function readForkFacts(db: Db, ids: readonly number[], version: string): ForkFacts {
  const facts: ForkFacts = {
    parentOf: new Map(),
    parents: new Map(),
    forksCount: new Map(),
    parentCode: new Map(),
    db,
    version,
  };
  if (ids.length === 0 || !hasForks(db)) return facts;
  // `+forked_from`: by the primary key; on the forked_from index SQLite would walk every fork.
  const links = prepared(
    db,
    `SELECT id, forked_from FROM items WHERE kind = 'project' AND id IN (${marks(ids.length)}) AND +forked_from IS NOT NULL`,
  ).all(...ids) as { id: number; forked_from: number }[];
  for (const l of links) facts.parentOf.set(l.id, l.forked_from);
  const parentIds = [...new Set(facts.parentOf.values())];
  if (parentIds.length > 0) {
    const rows = prepared(
      db,
      `SELECT ${ENTITY_COLUMNS} FROM items WHERE kind = 'project' AND id IN (${marks(parentIds.length)})`,
      true,
    ).all(...parentIds) as unknown[][];
    for (const a of rows) {
      const row = entityRowOf(a);
      facts.parents.set(row.id, row);
    }
    facts.parentCode = readCodeFacts(db, parentIds);
  }
  const counted = [...new Set([...ids, ...parentIds])];
  const counts = prepared(
    db,
    `SELECT forked_from AS id, count(*) AS n FROM items INDEXED BY items_forked_from
    WHERE kind = 'project' AND forked_from IN (${marks(counted.length)}) GROUP BY forked_from`,
  ).all(...counted) as { id: number; n: number }[];
  for (const c of counts) facts.forksCount.set(c.id, c.n);
  return facts;
}

/** `read_project` on the parent, as the sandbox models visibility (administrators, public, internal to signed-in users, owners). */
function canRead(viewer: ForkViewer, row: EntityRow): boolean {
  if (viewer.admin || row.visibility === 'public') return true;
  if (viewer.userId === null) return false;
  return row.visibility === 'internal' || row.owner_id === viewer.userId;
}

/** The `forked_from_project` of project `id` for `viewer`, or undefined when it has none or they may not read it. */
export function forkedFromProject(
  facts: ForkFacts,
  id: number,
  viewer: ForkViewer,
  origin: string,
): Record<string, unknown> | undefined {
  const parentId = facts.parentOf.get(id);
  const parent = parentId === undefined ? undefined : facts.parents.get(parentId);
  if (!parent || !canRead(viewer, parent)) return undefined;
  const e = projectEntity(parent, { origin, admin: false }, true);
  e.forks_count = facts.forksCount.get(parent.id) ?? 0;
  if (!canReadCode(facts.db, facts.parentCode, parent.id, viewer)) withoutCodeFields(e);
  if (showsParentStorage(viewer, facts.version)) e.repository_storage = parent.storage;
  return e;
}

/**
 * A rendered project's JSON text with its fork fields: `forks_count`, and `forked_from_project`
 * when `withParent` (the entity is ProjectDetails or below, see the module comment).
 */
export function withForkFieldsJson(
  json: string,
  id: number,
  facts: ForkFacts,
  viewer: ForkViewer,
  origin: string,
  withParent: boolean,
): string {
  const count = facts.forksCount.get(id) ?? 0;
  let out = count > 0 ? json.replace('"forks_count":0,', `"forks_count":${count},`) : json;
  const parent = withParent ? forkedFromProject(facts, id, viewer, origin) : undefined;
  if (parent) out = `${out.slice(0, -1)},"forked_from_project":${JSON.stringify(parent)}}`;
  return out;
}

/** The same for an entity object (GET /projects/:id). */
export function addForkFields(
  entity: Record<string, unknown>,
  id: number,
  facts: ForkFacts,
  viewer: ForkViewer,
  origin: string,
): void {
  entity.forks_count = facts.forksCount.get(id) ?? 0;
  const parent = forkedFromProject(facts, id, viewer, origin);
  if (parent) entity.forked_from_project = parent;
}
