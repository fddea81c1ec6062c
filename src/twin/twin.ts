/**
 * `shardmove twin`: a sandbox seed with the shape of the instance a dry run saw,
 * written from the dry run's checkpoint alone (no request, no credential). The seed is YAML with a
 * header saying what was carried; the items go to a file beside it, one JSON line each, streamed
 * from the checkpoint so a million items never sit in memory. The files are written to temporary
 * names and renamed, the items file first: a seed is never in place without its items; the
 * rehearsal plan (./rehearsal-plan.ts) last.
 */
import { basename } from 'node:path';
import type { RunContext } from '../machine/types.js';
import type { Kind } from '../plan/types.js';
import { countItems } from '../report/counts.js';
import { estimateDuration } from '../report/estimate.js';
import { writeFileAtomic } from '../files/atomic.js';
import { CHECKPOINT_MODE, RuntimeError } from '../runtime/errors.js';
import type { TwinStore } from '../store/views.js';
import { TWIN_UNFINISHED, TWIN_WRITE_FAILED, TwinError } from './errors.js';
import { ITEMS_HEADER, itemLine, renderTwinSeed } from './seed-text.js';
import type { TwinCount, TwinNetwork, TwinNetworkMember, TwinSeedInput } from './seed-text.js';
import type { NetworkMemberRow } from '../store/types.js';

/** Lines per chunk written to the items file. */
const CHUNK_LINES = 10_000;

export interface TwinOptions {
  /** The dry run's checkpoint, opened read-only by the caller. */
  store: TwinStore;
  planName: string;
  /** The plan's `move.concurrency`, for the estimate; null: the one the dry run used. */
  concurrency: number | null;
  /** The seed file; its items file is written beside it. */
  out: string;
  /** The rehearsal plan (./rehearsal-plan.ts), written last, beside the seed; absent when there is none. */
  rehearsal?: { file: string; text: string };
  /** How to rehearse, for the seed's header (./seed-text.ts). */
  rehearsalLines?: string[];
  /** The dry run that makes this checkpoint, as the operator runs it, for the refusals. */
  dryRunCommand?: string;
}

export interface TwinResult {
  seedFile: string;
  itemsFile: string;
  items: number;
  input: TwinSeedInput;
}

/** The items file beside a seed: `twin.yaml` -> `twin.items.jsonl`. */
export function itemsFileFor(out: string): string {
  return `${out.replace(/\.ya?ml$/i, '')}.items.jsonl`;
}

/**
 * The finished dry run's context, or a refusal: a real run's checkpoint (CHECKPOINT_MODE, exit 4:
 * its items have moved since), or no finished dry run (TWIN_UNFINISHED, exit 1: an unfinished one
 * may have listed part of a storage, and a twin of half an instance would rehearse the wrong thing).
 */
export function finishedDryRun(store: TwinStore, dryRunCommand = 'shardmove run PLAN --dry-run'): RunContext {
  const file = store.file;
  const saved = store.loadRun();
  const snap = saved?.snapshot as { status?: unknown; value?: unknown; context?: RunContext } | undefined;
  const mode = store.mode() ?? (snap?.context ? (snap.context.dryRun ? 'dry-run' : 'run') : null);
  if (mode === 'run') {
    throw new RuntimeError(
      CHECKPOINT_MODE,
      `refusing: ${file} holds a real run, whose items have moved since it listed them; a twin is made from a dry run's checkpoint (state/<plan>.dry-run.db beside the plan unless the dry run had --state)`,
    );
  }
  if (!snap?.context) {
    throw new TwinError(
      TWIN_UNFINISHED,
      `${file} holds no dry run yet: run \`${dryRunCommand}\` first, then make the twin from its checkpoint`,
    );
  }
  if (snap.status !== 'done' || snap.value !== 'done') {
    const c = snap.context;
    const where = c.error ? `it failed at ${c.error.step}: ${c.error.message}` : `it stopped at ${c.step}`;
    throw new TwinError(
      TWIN_UNFINISHED,
      `the dry run in ${file} has not finished (${where}), so it may have listed only part of the instance: run \`${dryRunCommand}\` again until it reports DRY RUN COMPLETE`,
    );
  }
  return snap.context;
}

/** Writes the twin of the finished dry run in `opts.store`: the items file, then the seed. */
export function writeTwin(opts: TwinOptions): TwinResult {
  const { store } = opts;
  const context = finishedDryRun(store, opts.dryRunCommand);
  const seedFile = opts.out;
  const itemsFile = itemsFileFor(seedFile);
  const counts = new Map<string, TwinCount>();
  const unlistable = new Set(store.shape.unlistableIds('projects'));
  const carriedUnlistable: number[] = [];
  let items = 0;
  // Fork networks (their members are written again as explicit projects, flags included).
  const memberRows = store.networkMembers();
  const memberFlags = new Map<number, { hidden: boolean; pendingDelete: boolean }>(
    memberRows.map((m) => [m.id, { hidden: false, pendingDelete: false }]),
  );
  function* lines(): Generator<string> {
    yield `${ITEMS_HEADER}\n`;
    const storageJson = new Map<string, string>();
    let chunk: string[] = [];
    for (const it of store.shape.items()) {
      items++;
      const key = `${it.kind}\n${it.source}`;
      let c = counts.get(key);
      if (!c)
        counts.set(
          key,
          (c = {
            kind: it.kind,
            source: it.source,
            items: 0,
            sized: 0,
            bytes: 0,
            maxBytes: 0,
            hidden: 0,
            pendingDelete: 0,
            hiddenUnknown: 0,
            pendingUnknown: 0,
          }),
        );
      c.items++;
      if (it.sizeBytes !== null) {
        c.sized++;
        c.bytes += it.sizeBytes;
        c.maxBytes = Math.max(c.maxBytes, it.sizeBytes);
      }
      if (it.kind === 'projects') {
        if (it.hidden === null) c.hiddenUnknown++;
        else if (it.hidden) c.hidden++;
        if (it.pendingDelete === null) c.pendingUnknown++;
        else if (it.pendingDelete) c.pendingDelete++;
        if (unlistable.has(it.id)) carriedUnlistable.push(it.id);
        if (memberFlags.has(it.id))
          memberFlags.set(it.id, { hidden: it.hidden === true, pendingDelete: it.pendingDelete === true });
      }
      let s = storageJson.get(it.source);
      if (s === undefined) storageJson.set(it.source, (s = JSON.stringify(it.source)));
      chunk.push(itemLine(it.kind, it.id, s, it.sizeBytes, it.hidden === true, it.pendingDelete === true));
      if (chunk.length === CHUNK_LINES) {
        yield `${chunk.join('\n')}\n`;
        chunk = [];
      }
    }
    if (chunk.length > 0) yield `${chunk.join('\n')}\n`;
  }
  write(itemsFile, lines());
  const networks = networksOf(store, memberRows, memberFlags);
  const all = [...counts.values()].sort(
    (a, b) => kindOrder(a.kind) - kindOrder(b.kind) || a.source.localeCompare(b.source),
  );
  const concurrency = twinConcurrency(store, opts.concurrency);
  // The twin carries every item, but the dry run's estimate is for what the plan moves: a partial
  // drain's items that stay (move.until) are not in it, as in the dry run's own report.
  const moving = all.map((c) => store.movingSizeStats(c.kind, c.source));
  const finishedAt = store.lastEventOf(['run.finished'])?.at ?? null;
  const estimate = estimateDuration({
    items: countItems(store.summary(finishedAt ?? 0)).remaining,
    bytes: moving.reduce((a, m) => a + m.bytes, 0),
    sized: moving.reduce((a, m) => a + m.sized, 0),
    maxBytes: moving.reduce((a, m) => Math.max(a, m.maxBytes), 0),
    concurrency,
  });
  const input: TwinSeedInput = {
    planName: opts.planName,
    checkpointName: basename(store.file),
    finishedAt,
    version: context.instanceVersion,
    enterprise: context.enterprise ?? null,
    access: context.access ?? {},
    byRecords: Object.values(context.drains)
      .filter((d) => d.byRecords)
      .map((d) => ({ kind: d.kind, source: d.source })),
    sources: context.sources,
    destination: context.destination,
    destinations: context.destinations ?? [context.destination],
    weights: context.previousWeights,
    counts: all,
    unlistable: carriedUnlistable,
    estimate: { ...estimate, concurrency },
    itemsFile: basename(itemsFile),
    networks,
    ...(opts.rehearsalLines ? { rehearsal: opts.rehearsalLines } : {}),
  };
  write(seedFile, renderTwinSeed(input));
  if (opts.rehearsal) write(opts.rehearsal.file, opts.rehearsal.text);
  return { seedFile, itemsFile, items, input };
}

/** The networks the dry run recorded, each with its members on the sources and their flags. */
function networksOf(
  store: TwinStore,
  members: readonly NetworkMemberRow[],
  flags: ReadonlyMap<number, { hidden: boolean; pendingDelete: boolean }>,
): TwinNetwork[] {
  const byNetwork = new Map<number, TwinNetworkMember[]>();
  for (const m of members)
    byNetwork.set(m.network, [
      ...(byNetwork.get(m.network) ?? []),
      {
        id: m.id,
        storage: m.source,
        sizeBytes: m.sizeBytes,
        ...(flags.get(m.id) ?? { hidden: false, pendingDelete: false }),
      },
    ]);
  return store
    .networks()
    .filter((n) => byNetwork.has(n.id))
    .map((n) => ({ root: n.id, rootStorage: n.rootStorage, poolBytes: n.poolBytes, members: byNetwork.get(n.id)! }));
}

const kindOrder = (k: Kind) => ['projects', 'snippets', 'groups'].indexOf(k);

/** The moves in flight the twin is estimated and rehearsed at: the plan's, else the dry run's, else 10. */
export function twinConcurrency(store: TwinStore, planConcurrency: number | null): number {
  return planConcurrency ?? dryRunConcurrency(store) ?? 10;
}

/** The concurrency the dry run estimated with (its `drain.dry_run` events), if any. */
function dryRunConcurrency(store: TwinStore): number | null {
  const e = store.lastEventOf(['drain.dry_run']);
  return typeof e?.data.concurrency === 'number' ? e.data.concurrency : null;
}

function write(file: string, text: string | Iterable<string>): void {
  try {
    writeFileAtomic(file, text, { mode: 0o644 });
  } catch (err) {
    throw new TwinError(TWIN_WRITE_FAILED, `cannot write ${file}: ${(err as Error).message}`, { cause: err });
  }
}
