// One snippet entity: the move records (and PUT /snippets/:id) showed a project snippet with
// a personal snippet's web_url (`/-/snippets/:id`), because they and the listing had drifted-apart
// copies of the snippet entity. One entity now serves all; a snippet has one web_url everywhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';

const ADMIN = { 'private-token': 'glpat-sandbox-root-api-sudo-0001', 'content-type': 'application/json' };
const STORAGES = ['default', 'nfs-1', 'nfs-2', 'cluster'];

interface Snippet {
  id: number;
  web_url: string;
  raw_url: string;
  repository_storage: string;
}

describe('a snippet has the same web_url from the move path and from the listing', () => {
  let sb: RunningSandbox;
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${sb.url}/api/v4${path}`, {
      method,
      headers: ADMIN,
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    expect(res.status, `${method} ${path}`).toBeLessThan(300);
    return (await res.json()) as T;
  };

  beforeAll(async () => {
    sb = await startSandbox({ moveDurationMs: 60_000 });
    // Seeds make personal snippets only; snippet 1 becomes a snippet of project group-1/project-1.
    sb.state.db
      .prepare("UPDATE items SET project_id = 1, namespace = 'group-1/project-1' WHERE kind = 'snippet' AND id = 1")
      .run();
  });
  afterAll(async () => {
    await sb.close();
  });

  for (const [id, expected] of [
    [1, '/group-1/project-1/-/snippets/1'],
    [2, '/-/snippets/2'],
  ] as const) {
    it(`${id === 1 ? 'project' : 'personal'} snippet ${id}`, async () => {
      const shown = await call<Snippet>('GET', `/snippets/${id}`);
      expect(shown.web_url).toBe(`${sb.url}${expected}`);
      const listed = (await call<Snippet[]>('GET', '/snippets/all?per_page=100')).find((s) => s.id === id);
      expect(listed?.web_url).toBe(shown.web_url);
      const updated = await call<Snippet>('PUT', `/snippets/${id}`, { title: `renamed ${id}` });
      expect(updated.web_url).toBe(shown.web_url);

      const destination = STORAGES.find((s) => s !== shown.repository_storage);
      const scheduled = await call<{ id: number; snippet: Snippet }>(
        'POST',
        `/snippets/${id}/repository_storage_moves`,
        { destination_storage_name: destination },
      );
      expect(scheduled.snippet.web_url).toBe(shown.web_url);
      expect(scheduled.snippet.raw_url).toBe(shown.raw_url);
      const again = await call<{ snippet: Snippet }>('GET', `/snippet_repository_storage_moves/${scheduled.id}`);
      expect(again.snippet.web_url).toBe(shown.web_url);
    });
  }
});
