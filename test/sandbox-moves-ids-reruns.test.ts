// Over real HTTP: the small move rows of the second fidelity pass. Snippet ids on the move routes
// are cast by ActiveRecord, not validated by Grape; an empty destination is blank as well as
// unknown; a job rerun while its lease is held fails the move without a message.
import { startManualSandbox } from './support/manual-sandbox.js';
import { describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import type { FaultOptions } from '../src/sandbox/faults.js';
import { callSandbox } from './support/sandbox-call.js';
import type { Seed } from '../src/sandbox/seed-schema.js';
import { loadSeed } from '../src/sandbox/seed.js';

const MOVE_MS = 1000;

function seed(): Seed {
  const s = structuredClone(loadSeed());
  s.inventory = {
    projects: [1, 2].map((id) => ({ id, storage: 'nfs-1' })),
    snippets: [1, 2, 3].map((id) => ({ id, storage: 'nfs-1' })),
    groups: [{ id: 1, storage: 'nfs-1' }],
  };
  return s;
}

async function call(sb: RunningSandbox, method: string, path: string, body?: unknown) {
  const { status, body: json } = await callSandbox(sb, method, path, body);
  return { status, body: json };
}

/** A sandbox on a manual clock (test/support/manual-sandbox.ts), closed after the test. */
const startManual = (faults: Partial<FaultOptions> = {}) => startManualSandbox(seed(), MOVE_MS, faults);

const readOnly = (sb: RunningSandbox, kind: string, id: number) =>
  (sb.state.db.prepare('SELECT read_only FROM items WHERE kind = ? AND id = ?').get(kind, id) as { read_only: number })
    .read_only;

describe('snippet ids on the move routes (lib/api/snippet_repository_storage_moves.rb)', () => {
  it('answers a non-integer id 404 Snippet Not Found, never 400, on every per-snippet route', async () => {
    const { sb } = await startManual();
    const notFound = { status: 404, body: { message: '404 Snippet Not Found' } };
    expect(await call(sb, 'GET', '/snippets/abc/repository_storage_moves')).toEqual(notFound);
    expect(await call(sb, 'GET', '/snippets/abc/repository_storage_moves/1')).toEqual(notFound);
    expect(
      await call(sb, 'POST', '/snippets/abc/repository_storage_moves', { destination_storage_name: 'cluster' }),
    ).toEqual(notFound);
    expect(await call(sb, 'GET', '/snippets/-1/repository_storage_moves')).toEqual(notFound);
    // The lookup is a `before` filter: it answers before Grape validates the route's other parameters.
    expect(await call(sb, 'GET', '/snippets/abc/repository_storage_moves/xyz')).toEqual(notFound);
    expect(
      await call(sb, 'POST', '/snippets/abc/repository_storage_moves', { destination_storage_name: ['cluster'] }),
    ).toEqual(notFound);
    expect(await call(sb, 'GET', '/snippets/1/repository_storage_moves/xyz')).toEqual({
      status: 400,
      body: { error: 'repository_storage_move_id is invalid' },
    });
    // Projects look their item up in the endpoint, after validation.
    expect(await call(sb, 'GET', '/projects/999/repository_storage_moves/xyz')).toEqual({
      status: 400,
      body: { error: 'repository_storage_move_id is invalid' },
    });
  });

  it('casts the id as ActiveRecord does: `2abc` is snippet 2', async () => {
    const { sb } = await startManual();
    const made = await call(sb, 'POST', '/snippets/2abc/repository_storage_moves', {
      destination_storage_name: 'cluster',
    });
    expect(made).toMatchObject({
      status: 201,
      body: { snippet: { id: 2 }, source_storage_name: 'nfs-1', destination_storage_name: 'cluster' },
    });
    expect((await call(sb, 'GET', '/snippets/2xyz/repository_storage_moves')).body.map((m) => m.id)).toEqual([
      made.body.id,
    ]);
    expect(readOnly(sb, 'snippet', 2)).toBe(1);
  });
});

describe('an empty destination_storage_name', () => {
  it('is blank as well as not in the list, for every kind, and schedules nothing', async () => {
    const { sb } = await startManual();
    const blank = {
      status: 400,
      body: { message: { destination_storage_name: ["can't be blank", 'is not included in the list'] } },
    };
    for (const path of ['/projects/1', '/snippets/1', '/groups/1']) {
      expect(await call(sb, 'POST', `${path}/repository_storage_moves`, { destination_storage_name: '' })).toEqual(
        blank,
      );
      expect(await call(sb, 'POST', `${path}/repository_storage_moves`, { destination_storage_name: '  ' })).toEqual(
        blank,
      );
    }
    expect((sb.state.db.prepare('SELECT count(*) n FROM moves').get() as { n: number }).n).toBe(0);
    expect(readOnly(sb, 'project', 1)).toBe(0);
  });
});

describe('a Sidekiq rerun while the lease is held (fault interruptRate)', () => {
  it('fails the started move with no error_message and leaves the repository writable; a new move then runs', async () => {
    const { sb, advance } = await startManual({ interruptRate: 1 });
    const first = await call(sb, 'POST', '/projects/1/repository_storage_moves', {
      destination_storage_name: 'cluster',
    });
    expect(first).toMatchObject({ status: 201, body: { state: 'scheduled' } });
    await advance(10);
    expect((await call(sb, 'GET', `/project_repository_storage_moves/${first.body.id}`)).body).toMatchObject({
      state: 'started',
    });
    expect(readOnly(sb, 'project', 1)).toBe(1);
    await advance(MOVE_MS);
    expect((await call(sb, 'GET', `/project_repository_storage_moves/${first.body.id}`)).body).toMatchObject({
      state: 'failed',
      error_message: null,
    });
    expect(readOnly(sb, 'project', 1)).toBe(0);
    expect(
      (sb.state.db.prepare("SELECT storage FROM items WHERE kind = 'project' AND id = 1").get() as { storage: string })
        .storage,
    ).toBe('nfs-1');
    expect(sb.state.faults.counts()).toMatchObject({ move_interrupted: 1 });
    expect(
      (await call(sb, 'POST', '/projects/1/repository_storage_moves', { destination_storage_name: 'cluster' })).status,
    ).toBe(201);
  });
});

describe('a job killed after the switch (fault failAfterSwitchRate)', () => {
  const itemState = async (sb: RunningSandbox, kind: string, id: number) => {
    const res = await fetch(`${sb.url}/-/sandbox/items/${kind}/${id}`, {
      headers: { 'private-token': 'glpat-sandbox-root-api-sudo-0001' },
    });
    return (await res.json()) as { storage: string; read_only: boolean; stale_copies: string[]; checksum: string };
  };

  it('fails the move without a message while the item already lives on the destination, and leaves the source copy', async () => {
    const { sb, advance } = await startManual({ failAfterSwitchRate: 1 });
    const before = await itemState(sb, 'project', 1);
    const move = await call(sb, 'POST', '/projects/1/repository_storage_moves', {
      destination_storage_name: 'cluster',
    });
    await advance(10);
    expect((await call(sb, 'GET', `/project_repository_storage_moves/${move.body.id}`)).body).toMatchObject({
      state: 'started',
    });
    await advance(MOVE_MS);
    expect((await call(sb, 'GET', `/project_repository_storage_moves/${move.body.id}`)).body).toMatchObject({
      state: 'failed',
      error_message: null,
    });
    expect(await itemState(sb, 'project', 1)).toMatchObject({
      storage: 'cluster',
      read_only: false,
      stale_copies: ['nfs-1'],
      checksum: before.checksum,
    });
    expect((await call(sb, 'GET', '/projects/1')).body).toMatchObject({ repository_storage: 'cluster' });
    expect(sb.state.faults.counts()).toMatchObject({ move_failed_after_switch: 1 });
    // Writable again: a new move is accepted, and moving back onto nfs-1 reuses the copy left there.
    const back = await call(sb, 'POST', '/projects/1/repository_storage_moves', { destination_storage_name: 'nfs-1' });
    expect(back.status).toBe(201);
    await advance(10);
    await advance(MOVE_MS);
    expect((await itemState(sb, 'project', 1)).stale_copies).toEqual(['cluster']);
  });

  it('draws the same moves under the same fault seed, beside the other fates', async () => {
    const fates = async (seed: number) => {
      const { sb, advance } = await startManual({ failAfterSwitchRate: 0.5, interruptRate: 0.2, seed });
      for (const [kind, id] of [
        ['projects', 1],
        ['projects', 2],
        ['snippets', 1],
        ['snippets', 2],
        ['snippets', 3],
        ['groups', 1],
      ] as const) {
        await call(sb, 'POST', `/${kind}/${id}/repository_storage_moves`, { destination_storage_name: 'cluster' });
      }
      await advance(10);
      await advance(MOVE_MS);
      return sb.state.db.prepare('SELECT kind, item_id, state, fate FROM moves ORDER BY id').all();
    };
    const a = await fates(11);
    expect(await fates(11)).toEqual(a);
    expect(a.some((m) => (m as { fate: string }).fate === 'failed_after_switch')).toBe(true);
  });
});
