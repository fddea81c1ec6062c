/**
 * JSON of inventory items as GitLab's REST entities show them (Project, Snippet, Group), built
 * from rows of the `items` table. Fields the sandbox has no data for carry GitLab's neutral values.
 *
 * The one admin-only field is `repository_storage`, as GitLab shows it. GitLab exposes no
 * read-only flag on any entity; the sandbox serves its internal state on
 * `GET /-/sandbox/items/:kind/:id` instead (inventory/sandbox-routes.ts).
 */
import type { ItemRow } from '../db.js';
import type { AuthorInfo } from './items.js';

/** What the entities read of a row. */
export type EntityRow = Omit<ItemRow, 'kind' | 'checksum'> & {
  /** The project's wiki repository in MB (0 for none, and for rows built without it). */
  wiki_mb?: number;
};

/**
 * The columns move records nest, as NESTED_ENTITY_COLUMNS lists them, from a raw (array) result:
 * better-sqlite3 builds row objects through slow property definitions, a literal is about a third
 * cheaper per page, and move list pages nest a hundred items each.
 */
export function nestedEntityRowOf(a: unknown[]): NestedEntityRow {
  return {
    id: a[0] as number,
    name: a[1] as string,
    path: a[2] as string,
    namespace: a[3] as string,
    visibility: a[4] as string,
    owner_id: a[5] as number | null,
    project_id: a[6] as number | null,
    created_at: a[7] as string,
    updated_at: a[8] as string,
  };
}

/** Columns for NestedEntityRow, in the order nestedEntityRowOf reads them. */
export const NESTED_ENTITY_COLUMNS =
  'id, name, path, namespace, visibility, owner_id, project_id, created_at, updated_at';

/**
 * Columns for EntityRow: lists select only these, since turning SQLite values into JavaScript
 * strings is most of a page's query cost. The nested entity's come first, so one reader serves both.
 */
export const ENTITY_COLUMNS = `${NESTED_ENTITY_COLUMNS}, storage, read_only, size_mb, commit_count, wiki_mb`;

/** An EntityRow from a raw (array) result of ENTITY_COLUMNS (see nestedEntityRowOf). */
export function entityRowOf(a: unknown[]): EntityRow {
  // The other columns are added in place: merging a second object (Object.assign, a spread) costs
  // several times the literal per row, adding in place about the same.
  const row = nestedEntityRowOf(a) as EntityRow;
  row.storage = a[9] as string;
  row.read_only = a[10] as number;
  row.size_mb = a[11] as number;
  row.commit_count = a[12] as number;
  row.wiki_mb = a[13] as number;
  return row;
}

export interface EntityOptions {
  origin: string;
  /**
   * `repository_storage` is shown: the caller is an effective administrator and the entity has the
   * field in this edition and tier (the routes decide: snippets need EE, groups EE Premium+).
   */
  admin: boolean;
  /** Host name for SSH URLs; derived from `origin` when absent (lists pass it once per page). */
  sshHost?: string;
}

/** The host name part of an origin, for `git@host:path.git` URLs. */
export function sshHostOf(origin: string): string {
  return new URL(origin).hostname;
}

/** Namespaces are `group-N` for generated items; N is the group's id (0 when not of that form). */
export function namespaceId(namespace: string): number {
  const m = /^group-(\d+)$/.exec(namespace);
  return m ? Number(m[1]) : 0;
}

function adminFields(row: EntityRow, opts: EntityOptions): Record<string, unknown> {
  return opts.admin ? { repository_storage: row.storage } : {};
}

/** The columns move records nest: ProjectIdentity and BasicSnippet read no others. */
export type NestedEntityRow = Pick<
  EntityRow,
  'id' | 'name' | 'path' | 'namespace' | 'visibility' | 'owner_id' | 'project_id' | 'created_at' | 'updated_at'
>;

/** GitLab's `ProjectIdentity` entity: what a move record nests, and how `Project` begins. */
export function projectIdentity(row: NestedEntityRow): Record<string, unknown> {
  return {
    id: row.id,
    description: null,
    name: row.name,
    name_with_namespace: row.namespace ? `${row.namespace} / ${row.name}` : row.name,
    path: row.path,
    path_with_namespace: row.namespace ? `${row.namespace}/${row.path}` : row.path,
    created_at: row.created_at,
  };
}

/** GitLab's `Project` entity (the fields clients commonly read). */
export function projectEntity(row: EntityRow, opts: EntityOptions, simple = false): Record<string, unknown> {
  const fullPath = row.namespace ? `${row.namespace}/${row.path}` : row.path;
  const webUrl = `${opts.origin}/${fullPath}`;
  const host = opts.sshHost ?? sshHostOf(opts.origin);
  const nsId = namespaceId(row.namespace);
  const base: Record<string, unknown> = {
    ...projectIdentity(row),
    default_branch: 'main',
    tag_list: [],
    topics: [],
    ssh_url_to_repo: `git@${host}:${fullPath}.git`,
    http_url_to_repo: `${webUrl}.git`,
    web_url: webUrl,
    readme_url: `${webUrl}/-/blob/main/README.md`,
    forks_count: 0,
    avatar_url: null,
    star_count: 0,
    last_activity_at: row.updated_at,
    namespace: {
      id: nsId,
      name: row.namespace,
      path: row.namespace,
      kind: 'group',
      full_path: row.namespace,
      parent_id: null,
      avatar_url: null,
      web_url: `${opts.origin}/groups/${row.namespace}`,
    },
  };
  // Fields are added in place rather than spread: listing pages build thousands of these per second.
  if (!simple) {
    base.visibility = row.visibility;
    base.archived = false;
    base.empty_repo = row.commit_count === 0;
    base.creator_id = row.owner_id;
    base.open_issues_count = 0;
    base.updated_at = row.updated_at;
    base.repository_object_format = 'sha1';
  }
  if (opts.admin) base.repository_storage = row.storage;
  return base;
}

/** Text JSON.stringify leaves as it is (printable ASCII without `"` and `\`). */
const PLAIN_JSON = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A number as JSON writes it (non-finite values become null, as in JSON.stringify). */
function jsonNumber(n: number | null): string {
  return n !== null && Number.isFinite(n) ? String(n) : 'null';
}

/**
 * `JSON.stringify(projectEntity(row, opts, simple))`, byte for byte. Listing pages spent more time
 * in the generic serializer walking a hundred fresh objects than in SQLite, so when every string
 * the entity is built from needs no escaping (generated inventories always) the text is written
 * directly; anything else goes through projectEntity. `entities.test.ts` keeps the two in step:
 * change both together.
 */
export function projectJson(row: EntityRow, opts: EntityOptions, simple = false): string {
  const host = opts.sshHost ?? sshHostOf(opts.origin);
  const name = row.name;
  const path = row.path;
  const ns = row.namespace;
  const origin = opts.origin;
  if (
    !PLAIN_JSON.test(
      `${name}${path}${ns}${origin}${host}${row.created_at}${row.updated_at}${row.visibility}${row.storage}`,
    )
  ) {
    return JSON.stringify(projectEntity(row, opts, simple));
  }
  const fullPath = ns ? `${ns}/${path}` : path;
  const webUrl = `${origin}/${fullPath}`;
  let out =
    `{"id":${jsonNumber(row.id)},"description":null,"name":"${name}","name_with_namespace":"${ns ? `${ns} / ${name}` : name}","path":"${path}"` +
    `,"path_with_namespace":"${fullPath}","created_at":"${row.created_at}","default_branch":"main","tag_list":[],"topics":[]` +
    `,"ssh_url_to_repo":"git@${host}:${fullPath}.git","http_url_to_repo":"${webUrl}.git","web_url":"${webUrl}","readme_url":"${webUrl}/-/blob/main/README.md"` +
    `,"forks_count":0,"avatar_url":null,"star_count":0,"last_activity_at":"${row.updated_at}"` +
    `,"namespace":{"id":${jsonNumber(namespaceId(ns))},"name":"${ns}","path":"${ns}","kind":"group","full_path":"${ns}","parent_id":null,"avatar_url":null,"web_url":"${origin}/groups/${ns}"}`;
  if (!simple) {
    out +=
      `,"visibility":"${row.visibility}","archived":false,"empty_repo":${row.commit_count === 0},"creator_id":${jsonNumber(row.owner_id)}` +
      `,"open_issues_count":0,"updated_at":"${row.updated_at}","repository_object_format":"sha1"`;
  }
  if (opts.admin) out += `,"repository_storage":"${row.storage}"`;
  return `${out}}`;
}

/** What a snippet entity shows besides its row: its author, and the description a request just set. */
type SnippetWords = [author: AuthorInfo | undefined, description?: string | null];

/** Personal snippets live at `/-/snippets/:id`, project snippets under their project's path. */
function snippetWebUrl(row: NestedEntityRow, origin: string): string {
  return row.project_id === null ? `${origin}/-/snippets/${row.id}` : `${origin}/${row.namespace}/-/snippets/${row.id}`;
}

/**
 * Where a snippet's repository lives in URLs: `Snippet#full_path`, the project's full path (project
 * snippets, whose `namespace` holds it) and then `snippets/<id>`.
 */
function snippetRepositoryPath(row: NestedEntityRow): string {
  return row.project_id === null ? `snippets/${row.id}` : `${row.namespace}/snippets/${row.id}`;
}

/**
 * GitLab's `BasicSnippet` entity: what a move record nests, and how `Snippet` begins. The sandbox
 * stores no description; `description` is one a request just set (PUT /snippets/:id echoes it).
 * The clone URLs are exposed `if: snippet.repository_exists?`; every sandbox snippet has a
 * repository (it has a storage and moves), so they are always there. They are built as
 * `Gitlab::RepositoryUrlBuilder` does: the SSH path prefix (`git@host:`) or the root URL, then the
 * repository's full path and `.git`.
 */
export function basicSnippetEntity(
  row: NestedEntityRow,
  origin: string,
  ...[author, description = null]: SnippetWords
): Record<string, unknown> {
  const webUrl = snippetWebUrl(row, origin);
  return {
    id: row.id,
    title: row.name,
    description,
    visibility: row.visibility,
    author: author
      ? {
          id: author.id,
          username: author.username,
          name: author.name,
          state: author.state,
          locked: false,
          avatar_url: null,
          web_url: `${origin}/${author.username}`,
        }
      : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
    project_id: row.project_id,
    web_url: webUrl,
    raw_url: `${webUrl}/raw`,
    ssh_url_to_repo: `git@${sshHostOf(origin)}:${snippetRepositoryPath(row)}.git`,
    http_url_to_repo: `${origin}/${snippetRepositoryPath(row)}.git`,
  };
}

/** GitLab's `Snippet` entity (personal snippets: project_id null). */
export function snippetEntity(row: EntityRow, opts: EntityOptions, ...words: SnippetWords): Record<string, unknown> {
  const webUrl = snippetWebUrl(row, opts.origin);
  return {
    ...basicSnippetEntity(row, opts.origin, ...words),
    file_name: 'snippet.txt',
    files: [{ path: 'snippet.txt', raw_url: `${webUrl}/raw/main/snippet.txt` }],
    imported: false,
    imported_from: 'none',
    ...adminFields(row, opts),
  };
}

/** GitLab's `Group` entity. A group's repository is its wiki, on `repository_storage`. */
export function groupEntity(row: EntityRow, opts: EntityOptions): Record<string, unknown> {
  return {
    id: row.id,
    web_url: `${opts.origin}/groups/${row.path}`,
    name: row.name,
    path: row.path,
    description: '',
    visibility: row.visibility,
    share_with_group_lock: false,
    require_two_factor_authentication: false,
    two_factor_grace_period: 48,
    project_creation_level: 'developer',
    auto_devops_enabled: null,
    subgroup_creation_level: 'maintainer',
    emails_disabled: false,
    emails_enabled: true,
    mentions_disabled: null,
    lfs_enabled: true,
    default_branch: null,
    request_access_enabled: true,
    full_name: row.name,
    full_path: row.path,
    created_at: row.created_at,
    parent_id: null,
    organization_id: 1,
    wiki_access_level: 'enabled',
    ...adminFields(row, opts),
  };
}
