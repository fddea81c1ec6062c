/**
 * Inventory fidelity, end to end: `shardmove run` against sandboxes that behave as GitLab does where
 * it is awkward: a Community Edition instance (snippet storage not exposed, no group moves), hidden
 * and pending-delete projects, several pages of newest-first snippets with a snippet created on the
 * source while the run lists them, and a project that breaks its listing page. Every run is judged
 * from the sandbox's own database, not only through its API. The sandbox and the commands run in
 * this process on one simulated clock (./support/sim-harness.ts), over real HTTP: nothing here is
 * about the process boundary, and no move or poll waits real time.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { flat, fromDb, sandboxEnv, tempDir, writePlan } from './support/cli-harness.js';
import { startHoldProxy } from './support/hold-proxy.js';
import { FakeClock } from './support/fake-clock.js';
import { SIM_START } from './support/sim-harness.js';
import { commandsOn } from './support/sim-harness.js';
import { changedSimulation } from './support/sim-speeda.js';

/** Items of a kind still off the destination, per the sandbox's own table. */
const leftOf = (db: string, kind: 'project' | 'snippet' | 'group') =>
  fromDb<{ id: number; storage: string }>(
    db,
    "SELECT id, storage FROM items WHERE kind = ? AND storage <> 'cluster' ORDER BY id",
    kind,
  );
const countOf = (db: string, kind: string) =>
  fromDb<{ n: number }>(db, 'SELECT count(*) AS n FROM items WHERE kind = ?', kind)[0]?.n ?? 0;

describe('shardmove run against editions and awkward inventories (one simulated clock)', () => {
  it('Community Edition: snippets moved by bulk and verified by move records, groups skipped with a warning, nothing left', async () => {
    const { sim, dir, db } = await changedSimulation('ce', { projects: 30, snippets: 25, groups: 4 }, (seed) => {
      seed.setIn(['instance', 'edition'], 'ce');
      seed.setIn(['instance', 'tier'], 'free');
    });
    expect(countOf(db, 'snippet')).toBeGreaterThan(0);
    const plan = writePlan(dir, { concurrency: 10 });
    const res = await sim.shardmove(['run', plan], { cwd: dir, env: sandboxEnv(sim.url) });
    const said = res.stdout + res.stderr;
    expect(res.code, said).toBe(0);
    expect(res.stdout).toContain('DONE: every repository moved and verified');
    expect(flat(res.stdout)).toMatch(
      /snippets on nfs-1: verified by move records, not by a listing, because the instance does not expose the storage of snippets/,
    );
    expect(res.stdout).toMatch(/groups skipped: the instance has no group repository storage moves/);
    expect(leftOf(db, 'project')).toEqual([]);
    expect(leftOf(db, 'snippet')).toEqual([]);
    // Snippet moves came from bulk jobs (no per-item POST was needed), and none was a move onto its own storage.
    const snippetMoves = fromDb<{ source: string; destination: string; state: string }>(
      db,
      "SELECT source, destination, state FROM moves WHERE kind = 'snippet'",
    );
    expect(snippetMoves.length).toBe(countOf(db, 'snippet'));
    expect(
      snippetMoves.every((m) => m.destination === 'cluster' && m.source !== 'cluster' && m.state === 'finished'),
    ).toBe(true);
    expect(fromDb<{ n: number }>(db, "SELECT count(*) AS n FROM moves WHERE kind = 'group'")[0]?.n).toBe(0);
  });

  it('shardmove demo --edition ce shows the CE path end to end', async () => {
    const dir = tempDir('demo-ce');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    // The demo starts its own sandbox, on the clock of its command: a simulated one.
    const res = await commandsOn(new FakeClock(SIM_START)).shardmove(['demo', '--edition', 'ce'], { cwd: dir });
    const said = res.stdout + res.stderr;
    expect(res.code, said).toBe(0);
    expect(said).toContain('verified by move records');
    expect(said).toContain('groups skipped');
  });

  it('hidden and pending-delete projects, several pages of snippets with one created on the source mid-run, an unlistable project: nothing left', async () => {
    const { sim, dir, db } = await changedSimulation('awkward', { projects: 60, snippets: 260, groups: 4 }, (seed) => {
      seed.setIn(['instance', 'tier'], 'premium');
      seed.setIn(['inventory', 'generate', 'hidden_fraction'], 0.1);
      seed.setIn(['inventory', 'generate', 'pending_delete_fraction'], 0.1);
      seed.setIn(['instance', 'unlistable'], [7]);
    });
    const hidden =
      fromDb<{ n: number }>(db, 'SELECT count(*) AS n FROM items WHERE hidden = 1 OR pending_delete = 1')[0]?.n ?? 0;
    expect(hidden).toBeGreaterThan(0);
    const plan = writePlan(dir, { concurrency: 10 });
    // A developer creates a snippet on nfs-1 as soon as the run has started listing nfs-1's
    // snippets (watched in the run's own checkpoint, looked at before each request the run sends):
    // it lands at the front of the newest-first listing, shifting every later page, and must still
    // be moved.
    let created = false;
    const checkpoint = join(dir, 'state', 'it.db');
    const createLateSnippet = () => {
      const w = new Database(db);
      try {
        w.pragma('busy_timeout = 5000');
        const row = w.prepare("SELECT max(id) AS id FROM items WHERE kind = 'snippet'").get() as { id: number };
        const now = new Date(sim.clock.now()).toISOString();
        w.prepare(
          `INSERT INTO items (kind, id, name, path, namespace, visibility, storage, read_only, size_mb, checksum, commit_count, owner_id, project_id, created_at, updated_at)
           VALUES ('snippet', ?, 'late', 'late', '', 'private', 'nfs-1', 0, 1, 'late', 1, 1, NULL, ?, ?)`,
        ).run(row.id + 1, now, now);
        created = true;
      } finally {
        w.close();
      }
    };
    const look = () => {
      if (created || !existsSync(checkpoint)) return;
      try {
        const cp = new Database(checkpoint, { readonly: true, fileMustExist: true });
        try {
          const n = (
            cp.prepare("SELECT count(*) AS n FROM items WHERE kind = 'snippets' AND source = 'nfs-1'").get() as {
              n: number;
            }
          ).n;
          if (n > 0) createLateSnippet();
        } finally {
          cp.close();
        }
      } catch {
        // The checkpoint is being created or migrated: look again at the next request.
      }
    };
    // A proxy between the run and the sandbox that holds nothing: its trap only looks, and never matches.
    const proxy = await startHoldProxy(sim.url);
    onTestFinished(() => proxy.close());
    void proxy.arm({ match: () => (look(), false), forward: false });
    const res = await sim.shardmove(['run', plan], { cwd: dir, env: sandboxEnv(proxy.url) });
    const said = res.stdout + res.stderr;
    expect(created).toBe(true);
    expect(res.code, said).toBe(0);
    expect(res.stdout).toContain('DONE: every repository moved and verified');
    expect(leftOf(db, 'project')).toEqual([]);
    expect(leftOf(db, 'snippet')).toEqual([]);
    expect(leftOf(db, 'group')).toEqual([]);
    // The unlistable project was moved (named by the narrowed keyset listing) and moved once.
    expect(
      fromDb<{ n: number }>(
        db,
        "SELECT count(*) AS n FROM moves WHERE kind = 'project' AND item_id = 7 AND state = 'finished'",
      )[0]?.n,
    ).toBe(1);
    // No item was moved twice.
    expect(
      fromDb<{ kind: string; item_id: number; n: number }>(
        db,
        "SELECT kind, item_id, count(*) AS n FROM moves WHERE state = 'finished' GROUP BY kind, item_id HAVING n > 1",
      ),
    ).toEqual([]);
  });
});
