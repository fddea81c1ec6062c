/**
 * Where GitLab keeps a repository on its storage, by hashed storage's rules: the SHA-256 of the
 * container's id, in hex; two folders of two characters each, then the hash. Projects live under
 * `@hashed` (the repository, its wiki and its design repository, which a project move moves
 * together), snippets under `@snippets`, group wikis under `@groups` (app/models/storage/hashed.rb,
 * ee/app/models/ee/group_wiki.rb). Relative to the storage's path (`/var/opt/gitlab/git-data/repositories`
 * on an Omnibus default storage); what the operator checks before removing a copy left behind.
 */
import { createHash } from 'node:crypto';
import type { Kind } from '../plan/types.js';

const PREFIX: Record<Kind, string> = { projects: '@hashed', snippets: '@snippets', groups: '@groups' };
const SUFFIXES: Record<Kind, readonly string[]> = {
  projects: ['.git', '.wiki.git', '.design.git'],
  snippets: ['.git'],
  groups: ['.wiki.git'],
};

/** The repository paths of one item on its storage, relative to the storage's path. */
export function diskPaths(kind: Kind, id: number): string[] {
  const hash = createHash('sha256').update(String(id)).digest('hex');
  const base = `${PREFIX[kind]}/${hash.slice(0, 2)}/${hash.slice(2, 4)}/${hash}`;
  return SUFFIXES[kind].map((s) => `${base}${s}`);
}
