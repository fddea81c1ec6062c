import { describe, expect, it } from 'vitest';
import { SandboxHttpError } from '../http/errors.js';
import { commitEntity, parseCommitBody, parseSnippetBody, parseWikiBody, wikiSlug } from './write-params.js';

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    if (err instanceof SandboxHttpError) return { status: err.status, body: err.body };
    throw err;
  }
  return undefined;
}

describe('write parameters', () => {
  it("accepts a commit with actions as a list or as Rack's indexed hash", () => {
    const p = parseCommitBody({
      branch: 'main',
      commit_message: 'm',
      actions: { 0: { action: 'create', file_path: 'a' } },
      author_name: 'A',
    });
    expect(p).toEqual({
      branch: 'main',
      commit_message: 'm',
      actions: [{ action: 'create', file_path: 'a' }],
      author_name: 'A',
    });
  });

  it('coerces numbers to strings as Grape does and reports every problem at once', () => {
    expect(parseCommitBody({ branch: 7, commit_message: 8, actions: [{ action: 'chmod', file_path: 9 }] }).branch).toBe(
      '7',
    );
    expect(errorOf(() => parseCommitBody({ branch: '', commit_message: [], actions: [{}] }))).toEqual({
      status: 400,
      body: {
        error:
          'commit_message is invalid, actions[0][action] is missing, actions[0][file_path] is missing, branch is empty',
      },
    });
  });

  it('knows which snippet changes touch the repository', () => {
    expect(parseSnippetBody({ title: 't' }).changesContent).toBe(false);
    expect(parseSnippetBody({ file_name: 'x.rb' }).changesContent).toBe(true);
    expect(parseSnippetBody({ files: [{ action: 'delete', file_path: 'a' }] }).changesContent).toBe(true);
    expect(errorOf(() => parseSnippetBody({ title: null }))).toMatchObject({ status: 400 });
  });

  it('defaults the wiki format and slugs titles', () => {
    expect(parseWikiBody({ title: 'A page', content: '' })).toEqual({
      title: 'A page',
      content: '',
      format: 'markdown',
    });
    expect(wikiSlug('  Getting   started ')).toBe('Getting-started');
  });

  it('renders a commit with its parent', () => {
    const c = commitEntity(
      {
        sha: 'a'.repeat(40),
        parentSha: 'b'.repeat(40),
        message: 'Title\n\nBody',
        createdAt: '2026-01-01T00:00:00.000Z',
      },
      { authorName: 'n', authorEmail: 'e', webUrl: 'w', projectId: 3, additions: 2 },
    );
    expect(c).toMatchObject({
      short_id: 'aaaaaaaa',
      title: 'Title',
      parent_ids: ['b'.repeat(40)],
      stats: { additions: 2, deletions: 0, total: 2 },
    });
  });
});
