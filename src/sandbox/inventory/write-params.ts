/**
 * Parameter validation (Grape's messages: `<name> is missing`, `<name> is invalid`, `<name> does
 * not have a valid value`, joined with ", ") and response entities for the write routes.
 */
import { invalidParam } from '../http/errors.js';

type Input = Record<string, unknown>;

class Problems {
  readonly list: string[] = [];
  add(message: string): void {
    this.list.push(message);
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw invalidParam(this.list.join(', '));
  }
}

/** Grape `type: String`: strings, and numbers coerced; undefined when absent or null. */
function str(input: Input, name: string, p: Problems, label = name): string | undefined {
  const v = input[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  p.add(`${label} is invalid`);
  return undefined;
}

function required(input: Input, name: string, p: Problems, label = name): string | undefined {
  const had = input[name] !== undefined && input[name] !== null;
  const v = str(input, name, p, label);
  if (!had) p.add(`${label} is missing`);
  return v;
}

function oneOf(value: string | undefined, allowed: readonly string[], label: string, p: Problems): void {
  if (value !== undefined && !allowed.includes(value)) p.add(`${label} does not have a valid value`);
}

/** Array parameters may arrive as a JSON array or as Rack's `a[]`/`a[0][k]` hash form. */
function list(input: Input, name: string, p: Problems): Input[] | undefined {
  const v = input[name];
  if (v === undefined || v === null) return undefined;
  const arr = Array.isArray(v) ? v : typeof v === 'object' ? Object.values(v as object) : null;
  if (arr === null || arr.some((e) => typeof e !== 'object' || e === null || Array.isArray(e))) {
    p.add(`${name} is invalid`);
    return undefined;
  }
  return arr as Input[];
}

const COMMIT_ACTIONS = ['create', 'delete', 'move', 'update', 'chmod'] as const;

export interface CommitParams {
  branch: string;
  commit_message: string;
  actions: { action: string; file_path: string }[];
  author_name?: string;
  author_email?: string;
}

/** POST /projects/:id/repository/commits: branch, commit_message and a non-empty actions list. */
export function parseCommitBody(input: Input): CommitParams {
  const p = new Problems();
  const branch = required(input, 'branch', p);
  const message = required(input, 'commit_message', p);
  const raw = list(input, 'actions', p);
  if (input.actions === undefined || input.actions === null) p.add('actions is missing');
  else if (raw && raw.length === 0) p.add('actions is empty');
  const actions = (raw ?? []).map((a, i) => {
    const action = required(a, 'action', p, `actions[${i}][action]`);
    oneOf(action, COMMIT_ACTIONS, `actions[${i}][action]`, p);
    const filePath = required(a, 'file_path', p, `actions[${i}][file_path]`);
    str(a, 'content', p, `actions[${i}][content]`);
    return { action: action ?? '', file_path: filePath ?? '' };
  });
  const authorName = str(input, 'author_name', p);
  const authorEmail = str(input, 'author_email', p);
  if (branch === '') p.add('branch is empty');
  p.throwIfAny();
  return {
    branch: branch as string,
    commit_message: message as string,
    actions,
    ...(authorName !== undefined ? { author_name: authorName } : {}),
    ...(authorEmail !== undefined ? { author_email: authorEmail } : {}),
  };
}

const SNIPPET_FIELDS = ['content', 'description', 'files', 'file_name', 'title', 'visibility'] as const;
const VISIBILITIES = ['private', 'internal', 'public'] as const;
const FILE_ACTIONS = ['create', 'update', 'delete', 'move'] as const;

export interface SnippetParams {
  title?: string;
  description?: string;
  visibility?: string;
  /** content, file_name or files: the snippet's repository changes (a commit). */
  changesContent: boolean;
}

/** PUT /snippets/:id: at least one field; content and files are mutually exclusive. */
export function parseSnippetBody(input: Input): SnippetParams {
  const p = new Problems();
  if (SNIPPET_FIELDS.every((f) => input[f] === undefined || input[f] === null)) {
    p.add(`${SNIPPET_FIELDS.join(', ')} are missing, at least one parameter must be provided`);
  }
  const has = (f: string) => input[f] !== undefined && input[f] !== null;
  if (has('content') && has('files')) p.add('content, files are mutually exclusive');
  const title = str(input, 'title', p);
  const description = str(input, 'description', p);
  const visibility = str(input, 'visibility', p);
  oneOf(visibility, VISIBILITIES, 'visibility', p);
  str(input, 'content', p);
  str(input, 'file_name', p);
  const files = list(input, 'files', p);
  for (const [i, f] of (files ?? []).entries()) {
    oneOf(required(f, 'action', p, `files[${i}][action]`), FILE_ACTIONS, `files[${i}][action]`, p);
    str(f, 'file_path', p, `files[${i}][file_path]`);
    str(f, 'previous_path', p, `files[${i}][previous_path]`);
    str(f, 'content', p, `files[${i}][content]`);
  }
  p.throwIfAny();
  return {
    ...(title !== undefined ? { title } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(visibility !== undefined ? { visibility } : {}),
    changesContent: has('content') || has('files') || has('file_name'),
  };
}

const WIKI_FORMATS = ['markdown', 'rdoc', 'asciidoc', 'org'] as const;

/** POST /groups/:id/wikis: title and content required, format one of GitLab's four. */
export function parseWikiBody(input: Input): { title: string; content: string; format: string } {
  const p = new Problems();
  const title = required(input, 'title', p);
  const content = required(input, 'content', p);
  const format = str(input, 'format', p) ?? 'markdown';
  oneOf(format, WIKI_FORMATS, 'format', p);
  if (title === '') p.add('title is empty');
  p.throwIfAny();
  return { title: title as string, content: content as string, format };
}

/** GitLab's wiki slug: spaces become dashes. */
export function wikiSlug(title: string): string {
  return title.trim().replace(/\s+/g, '-');
}

export interface CommitView {
  authorName: string;
  authorEmail: string;
  webUrl: string;
  projectId: number;
  additions: number;
}

/** GitLab's detailed Commit entity. */
export function commitEntity(
  c: { sha: string; parentSha: string | null; message: string; createdAt: string },
  v: CommitView,
): Record<string, unknown> {
  return {
    id: c.sha,
    short_id: c.sha.slice(0, 8),
    created_at: c.createdAt,
    parent_ids: c.parentSha ? [c.parentSha] : [],
    title: c.message.split('\n')[0] ?? '',
    message: c.message,
    author_name: v.authorName,
    author_email: v.authorEmail,
    authored_date: c.createdAt,
    committer_name: v.authorName,
    committer_email: v.authorEmail,
    committed_date: c.createdAt,
    trailers: {},
    extended_trailers: {},
    web_url: v.webUrl,
    stats: { additions: v.additions, deletions: 0, total: v.additions },
    status: null,
    project_id: v.projectId,
    last_pipeline: null,
  };
}
