/**
 * A project's refs as the sandbox keeps them (what ./refs.ts serves): branch and tag counts, HEAD, and
 * the seeded `content_drift` fault a move applies. Database only, so the move engine can use it.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db.js';
import { perDatabase } from '../db.js';

/** What a project's repository holds, as far as its refs show. */
export interface Refs {
  /** `main`, or null for an empty repository (no commit). */
  defaultBranch: string | null;
  head: string | null;
  branches: number;
  tags: number;
}

const statements = perDatabase((db: Db) => ({
  counts: db.prepare<[number], { branch_count: number | null; tag_count: number | null; commit_count: number }>(
    "SELECT branch_count, tag_count, commit_count FROM items WHERE kind = 'project' AND id = ?",
  ),
  lastCommit: db.prepare<[number], { id: number; sha: string }>(
    "SELECT id, sha FROM commits WHERE kind = 'project' AND item_id = ? ORDER BY id DESC LIMIT 1",
  ),
  drifting: db.prepare<[number], { content_drift: number }>(
    "SELECT content_drift FROM items WHERE kind = 'project' AND id = ?",
  ),
  dropCommit: db.prepare<[number]>('DELETE FROM commits WHERE id = ?'),
  drift: db.prepare<[number, number, number, number]>(
    "UPDATE items SET commit_count = ?, branch_count = ?, tag_count = ?, content_drift = 0 WHERE kind = 'project' AND id = ?",
  ),
}));

/** Branches and tags of a project the seed did not count: a few of each, fixed by its id. */
const defaultBranches = (id: number) => 1 + (id % 4);
const defaultTags = (id: number) => id % 6;

/** A stable 40-hex sha for what `parts` names. */
export function derivedSha(parts: string): string {
  return createHash('sha1').update(parts).digest('hex');
}

/** The refs of project `id` now. */
export function refsOf(db: Db, id: number): Refs {
  const s = statements(db);
  const row = s.counts.get(id);
  if (!row || row.commit_count === 0) return { defaultBranch: null, head: null, branches: 0, tags: 0 };
  const written = s.lastCommit.get(id);
  return {
    defaultBranch: 'main',
    head: written?.sha ?? derivedSha(`project:${id}:head:${row.commit_count}`),
    branches: row.branch_count ?? defaultBranches(id),
    tags: row.tag_count ?? defaultTags(id),
  };
}

/**
 * The seeded `content_drift` fault, applied as a move switches project `id` to its destination: the
 * newest commit and the newest tag are lost there (once; the flag clears). Returns whether it applied.
 */
export function applyContentDrift(db: Db, id: number): boolean {
  const s = statements(db);
  if (s.drifting.get(id)?.content_drift !== 1) return false;
  const before = refsOf(db, id);
  const row = s.counts.get(id);
  if (!row) return false;
  const written = s.lastCommit.get(id);
  if (written) s.dropCommit.run(written.id);
  s.drift.run(Math.max(0, row.commit_count - 1), before.branches, Math.max(0, before.tags - 1), id);
  return true;
}
