/**
 * One profile of the release matrix: the sandbox (on the profile's release and tier, with the
 * standard inventory and faults of ./release-scenario.ts), a Prometheus stand-in reading its
 * node_exporter, and `shardmove run --metrics-file`; then `status --json` and `report --json`, and
 * the sandbox's own records of every item and move. The commands run through the executable's
 * command line in this process, with the sandbox on one simulated clock of their own
 * (./sim-speedb.ts): the plan's 5-second stuck limits and every poll pass on that clock, not in real
 * time. Nothing here is about the process boundary (what a pipe gives of `status --json` is
 * test/cli-pipe-output.test.ts's). Every resource is released before it returns, so profiles can
 * run side by side, each on its own clock.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { ADMIN_TOKEN } from './cli-harness.js';
import { FakeClock } from './fake-clock.js';
import { SIM_START } from './sim-harness.js';
import type { SimResult } from './sim-harness.js';
import { commandsOn } from './sim-harness.js';
import { startNodeExporterPrometheus } from './release-prometheus.js';
import type { ItemKind, Profile } from './release-profile.js';
import { FAULTS } from './release-scenario.js';
import { brokenItems, planText, seedFor } from './release-seed.js';

/** An item as the sandbox has it (`GET /-/sandbox/items/:kind/:id`). */
export interface SandboxItem {
  kind: ItemKind;
  id: number;
  storage: string;
  read_only: boolean;
  stale_copies: string[];
}

/** A move as the sandbox recorded it: its row (with the fate the faults gave it), its API record and its job's log. */
export interface SandboxMove {
  id: number;
  kind: ItemKind;
  itemId: number;
  state: string;
  fate: string;
  source: string;
  destination: string;
  /** The API record has the field (16.7+). */
  hasErrorMessage: boolean;
  /** What the move's Sidekiq job logged (`GET /-/sandbox/moves/:kind/:id`). */
  exception: string | null;
}

export interface ProfileRun {
  run: SimResult;
  status: SimResult;
  report: SimResult;
  metrics: string;
  items: SandboxItem[];
  moves: SandboxMove[];
  /** The object pools (`GET /-/sandbox/pools`): network (root id), storage, member ids. */
  pools: { network: number; storage: string; members: number[] }[];
  /** Free-space queries the Prometheus stand-in answered. */
  promQueries: number;
}

async function admin<T>(sb: RunningSandbox, path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${sb.url}${path}`, { headers: { 'private-token': ADMIN_TOKEN } });
  return { status: res.status, body: (await res.json()) as T };
}

/** The sandbox's records: every seeded item, and every move with its fate, API record and log. */
async function records(sb: RunningSandbox): Promise<Pick<ProfileRun, 'items' | 'moves' | 'pools'>> {
  const db = sb.state.db;
  const items: SandboxItem[] = [];
  for (const row of db.prepare('SELECT kind, id FROM items ORDER BY kind, id').all() as {
    kind: ItemKind;
    id: number;
  }[]) {
    const { status, body } = await admin<SandboxItem>(sb, `/-/sandbox/items/${row.kind}/${row.id}`);
    if (status !== 200) throw new Error(`/-/sandbox/items/${row.kind}/${row.id}: ${status}`);
    items.push({ ...body, kind: row.kind, id: row.id });
  }
  const rows = db
    .prepare('SELECT id, kind, item_id, state, fate, source, destination FROM moves ORDER BY id')
    .all() as {
    id: number;
    kind: ItemKind;
    item_id: number;
    state: string;
    fate: string;
    source: string;
    destination: string;
  }[];
  const listed = new Map<string, Record<string, unknown>>();
  for (const kind of ['project', 'snippet', 'group'] as const) {
    for (let page = 1; ; page++) {
      const { status, body } = await admin<Record<string, unknown>[]>(
        sb,
        `/api/v4/${kind}_repository_storage_moves?per_page=100&page=${page}`,
      );
      if (status === 404) break; // no group moves on CE
      for (const m of body) listed.set(`${kind}:${m.id as number}`, m);
      if (body.length < 100) break;
    }
  }
  const moves: SandboxMove[] = [];
  for (const r of rows) {
    const record = listed.get(`${r.kind}:${r.id}`);
    if (!record) throw new Error(`move ${r.kind}:${r.id} is not in its move list`);
    const log = await admin<{ exception: string | null }>(sb, `/-/sandbox/moves/${r.kind}/${r.id}`);
    moves.push({
      id: r.id,
      kind: r.kind,
      itemId: r.item_id,
      state: record.state as string,
      fate: r.fate,
      source: r.source,
      destination: r.destination,
      hasErrorMessage: 'error_message' in record,
      exception: log.body.exception,
    });
  }
  const pools = (await admin<ProfileRun['pools']>(sb, '/-/sandbox/pools')).body;
  return { items, moves, pools };
}

/** Runs the standard drain on `profile`; `ids` are the items' ids per role (pickIds). */
export async function runProfile(profile: Profile, ids: ReadonlyMap<string, number>): Promise<ProfileRun> {
  const dir = mkdtempSync(join(tmpdir(), `shardmove-matrix-${profile.name.replace(/\W+/g, '-')}-`));
  const clock = new FakeClock(SIM_START);
  const { shardmove } = commandsOn(clock);
  const sb = await startSandbox({
    clock,
    seed: seedFor(profile, ids),
    workers: 20,
    moveDurationMs: 20,
    faults: { ...FAULTS, brokenItems: brokenItems(ids) },
  });
  const prometheus = await startNodeExporterPrometheus(sb.url);
  try {
    const plan = join(dir, 'plan.yaml');
    writeFileSync(plan, planText());
    const env = { SHARDMOVE_URL: sb.url, SHARDMOVE_TOKEN: ADMIN_TOKEN, PROMETHEUS_URL: prometheus.url };
    const run = await shardmove(['run', plan, '--metrics-file', 'run.prom'], { cwd: dir, env });
    const [status, report] = await Promise.all([
      shardmove(['status', plan, '--json'], { cwd: dir }),
      shardmove(['report', plan, '--json'], { cwd: dir }),
    ]);
    const metrics = readFileSync(join(dir, 'run.prom'), 'utf8');
    return { run, status, report, metrics, ...(await records(sb)), promQueries: prometheus.queries() };
  } finally {
    await prometheus.close();
    await sb.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
