/**
 * Found by the torture: move fates are keyed by the item's attempt, and a sandbox restarted on its
 * --db must keep counting attempts from its records. It counted in memory, so after a restart an
 * item's next move replayed the fate of its first one (a failed item failed again, and again).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import { createFaults } from '../src/sandbox/faults.js';
import type { FaultOptions } from '../src/sandbox/faults.js';
import { ADMIN_TOKEN, tempDir } from './support/cli-harness.js';

const FAULTS: FaultOptions = {
  latencyMs: 0,
  errorRate: 0,
  resetRate: 0,
  moveFailRate: 0.5,
  brokenItems: [],
  stuckRate: 0,
  seed: 11,
};

async function moveOnce(url: string, id: number): Promise<void> {
  const headers = { 'PRIVATE-TOKEN': ADMIN_TOKEN, 'content-type': 'application/json' };
  const item = (await (await fetch(`${url}/api/v4/projects/${id}`, { headers })).json()) as {
    repository_storage: string;
  };
  // To its own storage: nothing is copied, the fate still decides the outcome.
  const res = await fetch(`${url}/api/v4/projects/${id}/repository_storage_moves`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ destination_storage_name: item.repository_storage }),
  });
  expect(res.status).toBe(201);
  const move = (await res.json()) as { id: number };
  for (let i = 0; i < 200; i++) {
    const m = (await (
      await fetch(`${url}/api/v4/projects/${id}/repository_storage_moves/${move.id}`, { headers })
    ).json()) as { state: string };
    if (['finished', 'failed', 'cleanup failed'].includes(m.state)) return;
    await sleep(10);
  }
  throw new Error(`move ${move.id} did not end`);
}

describe('sandbox restart on --db: move fates', () => {
  it("an item's moves after a restart draw their own attempts, not the first ones again", async () => {
    const dir = tempDir('fates');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const db = join(dir, 'sandbox.db');
    const expected = (id: number) => [1, 2, 3, 4].map((a) => createFaults(FAULTS).moveFate('project', id, a));
    // An item whose attempts 3 and 4 differ from 1 and 2, so a replay would show.
    const id = Array.from({ length: 50 }, (_, i) => i + 1).find((i) => {
      const f = expected(i);
      return f[0] !== f[2] || f[1] !== f[3];
    }) as number;
    expect(id).toBeDefined();

    let sb = await startSandbox({ db, moveDurationMs: 5, faults: FAULTS });
    await moveOnce(sb.url, id);
    await moveOnce(sb.url, id);
    await sb.close();
    sb = await startSandbox({ db, moveDurationMs: 5, faults: FAULTS });
    try {
      await moveOnce(sb.url, id);
      await moveOnce(sb.url, id);
      const fates = (
        sb.state.db.prepare("SELECT fate FROM moves WHERE kind = 'project' AND item_id = ? ORDER BY id").all(id) as {
          fate: string;
        }[]
      ).map((r) => r.fate);
      expect(fates).toEqual(expected(id));
    } finally {
      await sb.close();
    }
  });
});
