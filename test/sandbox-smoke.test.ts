import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { startSandbox } from '../src/sandbox/index.js';

describe('sandbox skeleton', () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await fetch(`${sandbox.url}/api/v4/nothing-here`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: '404 Not Found' });
  });

  it('seeds the default inventory', () => {
    const row = sandbox.state.db.prepare("SELECT count(*) n FROM items WHERE kind = 'project'").get() as { n: number };
    expect(row.n).toBe(300);
  });
});
