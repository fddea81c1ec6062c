/**
 * GitLab JSON -> the orchestrator's camelCase records. Parsing is tolerant of missing optional
 * fields (older GitLab versions) and strict about the ones a decision depends on (ids, state).
 */
import type { Kind } from '../plan/types.js';
import { ApiInvalidResponseError } from './errors.js';
import type { RequestRef } from './errors.js';
import type { ItemRecord, MoveRecord, MoveState } from './types.js';

const MOVE_STATES: readonly string[] = [
  'initial',
  'scheduled',
  'started',
  'replicated',
  'finished',
  'failed',
  'cleanup failed',
];

/** `projects` -> `project`: the nested key of a move and the prefix of the move list path. */
export function singular(kind: Kind): 'project' | 'snippet' | 'group' {
  return kind === 'projects' ? 'project' : kind === 'snippets' ? 'snippet' : 'group';
}

type Json = Record<string, unknown>;

function obj(v: unknown, ref: RequestRef, what: string): Json {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new ApiInvalidResponseError(ref, `${what} is not an object`);
  return v as Json;
}

function int(v: unknown, ref: RequestRef, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v))
    throw new ApiInvalidResponseError(ref, `${what} is not an integer`);
  return v;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** One move record; the item id comes from the nested project/snippet/group. */
export function parseMove(kind: Kind, raw: unknown, ref: RequestRef): MoveRecord {
  const m = obj(raw, ref, 'move');
  const state = str(m['state']);
  if (state === null || !MOVE_STATES.includes(state))
    throw new ApiInvalidResponseError(ref, `move state ${JSON.stringify(m['state'])}`);
  const nested = obj(m[singular(kind)], ref, `move.${singular(kind)}`);
  return {
    id: int(m['id'], ref, 'move.id'),
    kind,
    itemId: int(nested['id'], ref, `move.${singular(kind)}.id`),
    itemName:
      str(
        kind === 'projects'
          ? nested['path_with_namespace']
          : kind === 'snippets'
            ? nested['title']
            : nested['full_path'],
      ) ?? str(nested['name']),
    state: state as MoveState,
    sourceStorage: str(m['source_storage_name']) ?? '',
    destinationStorage: str(m['destination_storage_name']) ?? '',
    errorMessage: str(m['error_message']),
    createdAt: str(m['created_at']) ?? '',
  };
}

/** One project, snippet or group as listed or shown. */
export function parseItem(kind: Kind, raw: unknown, ref: RequestRef): ItemRecord {
  const it = obj(raw, ref, 'item');
  const name = kind === 'projects' ? it['path_with_namespace'] : kind === 'snippets' ? it['title'] : it['full_path'];
  const stats = typeof it['statistics'] === 'object' && it['statistics'] !== null ? (it['statistics'] as Json) : null;
  const size = stats?.['repository_size'];
  // A project move copies the wiki too (`mirror_repositories`), so its bytes count as the move's.
  const wiki = stats?.['wiki_size'];
  const wikiBytes = typeof size === 'number' && typeof wiki === 'number' && wiki > 0 ? wiki : 0;
  // `repository_read_only` is not a GitLab API field (docs/gitlab-behaviour.md §1.4): never read it.
  const item: ItemRecord = {
    kind,
    id: int(it['id'], ref, 'item.id'),
    storage: str(it['repository_storage']),
    name: str(name) ?? str(it['name']) ?? '',
    sizeBytes: typeof size === 'number' ? size + wikiBytes : null,
  };
  if (wikiBytes > 0) item.wikiBytes = wikiBytes;
  if (kind === 'snippets') {
    // For move.select: a project snippet follows its project, a personal one its author.
    const project = it['project_id'];
    const author =
      typeof it['author'] === 'object' && it['author'] !== null ? (it['author'] as Json)['username'] : null;
    // Only what the entity shows: a field it leaves out stays absent (`chooseItems` reads it as null).
    if ('project_id' in it) item.projectId = typeof project === 'number' ? project : null;
    if ('author' in it) item.author = typeof author === 'string' ? author : null;
  }
  if (kind !== 'projects') return item;
  // Fork networks: the parent, for callers who can read it (docs/gitlab-behaviour.md).
  const parent =
    typeof it['forked_from_project'] === 'object' && it['forked_from_project'] !== null
      ? (it['forked_from_project'] as Json)['id']
      : null;
  const forks = it['forks_count'];
  if (typeof parent === 'number') item.forkedFromId = parent;
  if (typeof forks === 'number' && forks > 0) item.forksCount = forks;
  // GitLab leaves `forks_count` out for a caller without read_code (a project whose repository
  // feature is disabled, for an administrator): unknown, not 0 (docs/gitlab-behaviour.md §1.5).
  else if (forks === undefined || forks === null) item.forksCount = null;
  return item;
}
