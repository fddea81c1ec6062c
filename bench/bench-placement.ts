/**
 * Row 7 of `npm run bench` (`BENCH_ROWS=7`), or on its own (`node --import tsx bench/bench-placement.ts`):
 * where the drain puts the bytes on two destinations of a long-tailed inventory with fork networks
 * (test/support/long-tail-inventory.ts: 400 projects, 30 networks of 2 to 12 members), by equal
 * and by 2:1 weights, no room declared. The real drain runs in-process against the fake instance
 * on a fake clock (a listing page takes `BENCH_PLACEMENT_PAGE_MS`, 2 s by default, as an admin
 * listing with statistics does on a large instance), once per `move.order`; the bytes are counted
 * as GitLab lands them (each project, each pool member with its pool's objects, one pool copy per
 * network and destination). The pure unit policy (`placeUnits`) on the same inventory is printed
 * beside it: what the best largest-first greedy gives.
 *
 * Knobs (env): BENCH_PLACEMENT_SEEDS=41 (comma-separated inventory seeds), BENCH_PLACEMENT_PAGE_MS=2000,
 * BENCH_PLACEMENT_ROOTS_ON=1 (also the variant whose every other network root sits on destination a).
 */
import { pathToFileURL } from 'node:url';
import type { DrainPair } from '../src/machine/types.js';
import type { Plan } from '../src/plan/types.js';
import { runDrain } from '../src/actors/drain/run.js';
import { placeUnits } from '../src/actors/drain/placement.js';
import { createHarness, testPlan, withDelays } from '../test/support/drain-harness.js';
import { addToFake, landedBytes, longTailInventory, shareOf, spreadOf } from '../test/support/long-tail-inventory.js';
import type { LongTailInventory } from '../test/support/long-tail-inventory.js';

const TO = ['a', 'b'] as const;
const WEIGHTS = { equal: { a: 100, b: 100 }, '2:1': { a: 100, b: 50 } } as const;
const ORDERS = ['together', 'by-kind'] as const;

export interface PlacementRow {
  seed: number;
  rootsOn: string | null;
  weights: keyof typeof WEIGHTS;
  /** `together`, `by-kind` (the drain), or `units` (the pure policy). */
  by: string;
  bytes: Record<string, number>;
  /** (largest - smallest) / smallest. */
  spread: number;
  /** a's share of the bytes. */
  shareA: number;
}

async function drained(
  inv: LongTailInventory,
  weights: Record<string, number>,
  order: (typeof ORDERS)[number],
  pageMs: number,
): Promise<Record<string, number>> {
  const base = testPlan({
    move: { to: [...TO], kinds: ['projects'], order, concurrency: 10 } as Partial<Plan['move']>,
  });
  const plan: Plan = { ...base, weights: { ...weights, 'nfs-1': 0 } };
  const bare = createHarness(plan);
  addToFake(bare.fake, inv);
  const h = withDelays(bare, { listItemsOnStorage: pageMs });
  const pair: DrainPair = { source: 'nfs-1', kind: 'projects', access: 'listing' };
  await runDrain(h.deps, order === 'together' ? { ...pair, pairs: [pair] } : pair);
  return landedBytes(inv, (id) => h.fake.item('projects', id)?.storage ?? null, TO);
}

/** The pure unit policy on the inventory: each network one unit, each other project its own. */
function unitsOf(inv: LongTailInventory, weights: Record<string, number>): Record<string, number> {
  const storage = new Map(inv.projects.map((p) => [p.id, p.storage]));
  const inNet = new Map(inv.networks.flatMap((n) => n.members.map((m) => [m, n] as const)));
  const units = [
    ...inv.projects
      .filter((p) => !inNet.has(p.id) && !TO.includes(p.storage as 'a'))
      .map((p) => ({ sizeOn: () => p.sizeBytes })),
    ...inv.networks.map((n) => {
      const moving = n.members.filter((m) => !TO.includes(storage.get(m) as 'a'));
      const own = moving.reduce((x, m) => x + (inv.projects[m - 1]?.sizeBytes ?? 0) + n.poolBytes, 0);
      const poolOn = storage.get(n.root);
      return { sizeOn: (d: string) => own + (d === poolOn ? 0 : n.poolBytes), anchor: poolOn ?? null };
    }),
  ];
  const candidates = TO.map((name) => ({ name, placed: 0, room: null, weight: weights[name] ?? 0 }));
  return placeUnits(candidates, units).bytes;
}

/** Every row: per seed, per inventory variant, per weights, the drain by each order and the pure policy. */
export async function placementRows(
  opts: { seeds?: number[]; pageMs?: number; rootsOn?: boolean } = {},
): Promise<PlacementRow[]> {
  const out: PlacementRow[] = [];
  for (const seed of opts.seeds ?? [41]) {
    for (const rootsOn of opts.rootsOn === false ? [null] : [null, 'a']) {
      const inv = longTailInventory({ seed, ...(rootsOn ? { rootsOn } : {}) });
      for (const [name, weights] of Object.entries(WEIGHTS) as [keyof typeof WEIGHTS, Record<string, number>][]) {
        const by: [string, Record<string, number>][] = [];
        for (const order of ORDERS) by.push([order, await drained(inv, weights, order, opts.pageMs ?? 2000)]);
        by.push(['units', unitsOf(inv, weights)]);
        for (const [b, bytes] of by)
          out.push({
            seed,
            rootsOn,
            weights: name,
            by: b,
            bytes,
            spread: spreadOf(bytes),
            shareA: shareOf(bytes, 'a'),
          });
      }
    }
  }
  return out;
}

const MB = (n: number) => `${(n / 1e6).toFixed(0)} MB`;

/** The rows as table lines. */
export function placementLines(rows: readonly PlacementRow[]): string[] {
  return rows.map((r) => {
    const target = r.weights === 'equal' ? 'spread (target <= 10%)' : 'a share (target 66.7% ± 5)';
    const figure = r.weights === 'equal' ? `${(r.spread * 100).toFixed(1)}%` : `${(r.shareA * 100).toFixed(1)}%`;
    const inv = `seed ${r.seed}${r.rootsOn ? `, roots on ${r.rootsOn}` : ''}`;
    return `  ${`${inv}, ${r.weights}, ${r.by}`.padEnd(40)} a ${MB(r.bytes.a ?? 0).padStart(9)}  b ${MB(r.bytes.b ?? 0).padStart(9)}  ${target} ${figure}`;
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const env = process.env;
  const seeds = (env.BENCH_PLACEMENT_SEEDS ?? '41').split(',').map(Number);
  const pageMs = Number(env.BENCH_PLACEMENT_PAGE_MS ?? 2000);
  const rows = await placementRows({ seeds, pageMs, rootsOn: env.BENCH_PLACEMENT_ROOTS_ON !== '0' });
  process.stdout.write(
    `7. placement on two destinations, no room declared (400 projects, 30 fork networks; listing page ${pageMs} ms)\n`,
  );
  for (const line of placementLines(rows)) process.stdout.write(`${line}\n`);
}
