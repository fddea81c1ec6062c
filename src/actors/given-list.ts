/**
 * The run machine's actors for a reviewed item list (`run PLAN --only FILE`): the same seven, three
 * changed. Pre-flight reads every listed item on the instance and seeds the checkpoint with them,
 * once and in one transaction: those still on the source the list names become pending rows with
 * the list's destination pinned, those elsewhere or deleted `left` rows with the reason (each a
 * `list.skipped` event), and every listing round is marked done so that no drain ever lists a
 * source. The room is judged on the listed items, their fork networks counted as the dry run did
 * (./list-networks.ts). The drain moves the given rows only (as a revert does, ./drain/given.ts);
 * verification reads each moved item and checks it is on its destination, and compares the content
 * of the sampled projects as a whole drain does (verify.content).
 * Nothing else on a source is ever moved in the place of an item that is no longer there.
 */
import type { ItemRecord } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import type { GivenList } from '../store/types.js';
import { checkGivenRoom } from './capacity.js';
import { locate } from './drain/locate.js';
import { listNetworks } from './list-networks.js';
import type { Location } from './drain/locate.js';
import { abortError } from './errors.js';
import { verifyReverted } from './revert.js';
import { listWhatStays } from './stays.js';
import { verifyContent } from './verify-content.js';
import type { ActorDeps, RunActors } from './types.js';
import type { GivenListSeedStore } from '../store/views.js';

/** One item of the list, as the runtime read it from the file. */
export interface GivenItem {
  kind: Kind;
  id: number;
  path: string;
  sizeBytes: number | null;
  source: string;
  destination: string;
}

export interface GivenListOptions {
  items: readonly GivenItem[];
  /** The list's identity, recorded with the seed (a resume must bring the same list). */
  list: Omit<GivenList, 'seededAt'>;
}

const PARALLEL_READS = 8;

/** The real actors with a reviewed list's pre-flight, drain and verification. */
export function givenListActors(base: RunActors, o: GivenListOptions): RunActors {
  return {
    ...base,
    preflight: async (deps) => {
      const out = await base.preflight({ ...deps, itemsGiven: 'list' });
      const seeded = deps.store.givenList() === null ? await seedList(deps, o) : null;
      const room = await checkGivenRoom(deps, out.version, seeded?.unknownForks ?? 0);
      return { ...out, warnings: [...out.warnings, ...room.warnings], notes: [...(out.notes ?? []), ...room.notes] };
    },
    drain: (deps, input) => base.drain({ ...deps, itemsGiven: 'list' }, { ...input, access: 'listing', ahead: null }),
    verify: async (deps) => {
      const own = await verifyReverted(deps, 'list');
      // The list's items read one by one say nothing of the rest of a source: list it for what stays.
      const left = await listWhatStays(deps);
      // The sampled projects' content (verify.content), as a whole drain compares it: last, after every listing.
      const content = await verifyContent(deps);
      return {
        ...own,
        ok: own.ok && left.problems.length === 0 && (content?.output.differ ?? 0) === 0,
        problems: [...own.problems, ...left.problems, ...(content?.problems ?? [])],
        stays: left.stays,
        ...(content ? { content: content.output } : {}),
      };
    },
  };
}

/**
 * Reads every listed item where the list says it is, then writes them all in one transaction: a
 * kill before it leaves nothing (the next process reads again), after it rows to resume from.
 */
async function seedList(deps: ActorDeps<GivenListSeedStore>, o: GivenListOptions): Promise<{ unknownForks: number }> {
  const { store, plan, clock } = deps;
  const found: Location[] = [];
  // The projects as read, with their sizes, for their fork networks: the same read that finds each item.
  const records = new Map<number, ItemRecord>();
  const api: ActorDeps<GivenListSeedStore>['api'] = Object.assign(
    Object.create(deps.api) as ActorDeps<GivenListSeedStore>['api'],
    {
      getItem: async (kind: Kind, id: number) => {
        const r = await deps.api.getItem(kind, id, kind === 'projects' ? { statistics: true } : undefined);
        if (r && kind === 'projects') records.set(id, r);
        return r;
      },
    },
  );
  for (let i = 0; i < o.items.length; i += PARALLEL_READS) {
    if (deps.signal.aborted) throw abortError(deps.signal);
    const batch = o.items.slice(i, i + PARALLEL_READS);
    found.push(
      ...(await Promise.all(
        batch.map((it) => locate({ deps: { api, signal: deps.signal }, kind: it.kind, source: it.source }, it.id)),
      )),
    );
  }
  // Their networks as the dry run that wrote the list found them: only those still on their source move.
  const moving = o.items.filter((it, i) => it.kind === 'projects' && found[i]!.at === 'source');
  const nets = await listNetworks(
    deps,
    moving.map((it) => records.get(it.id)).filter((r) => r !== undefined),
  );
  const readAt = clock.now();
  store.batch(() => {
    for (const kind of plan.move.kinds) for (const source of plan.move.from) store.startRound(kind, source, 1);
    let skipped = 0;
    o.items.forEach((it, i) => {
      store.recordPage(
        it.kind,
        it.source,
        1,
        [{ kind: it.kind, id: it.id, storage: it.source, name: it.path, sizeBytes: it.sizeBytes }],
        readAt,
      );
      // Pinned before any intent: the item goes where the reviewed list says, never elsewhere.
      store.pinDestination(it.kind, it.id, it.destination);
      const where = found[i]!;
      const reason =
        where.at === 'elsewhere'
          ? `no longer on ${it.source} as the list says: now on ${where.storage}`
          : where.at === 'gone'
            ? 'no longer on the instance (deleted)'
            : null;
      if (reason === null) return;
      skipped++;
      store.markLeft(it.kind, it.id, readAt, reason);
      store.appendEvent(
        'list.skipped',
        {
          kind: it.kind,
          source: it.source,
          id: it.id,
          storage: where.at === 'elsewhere' ? where.storage : null,
          reason,
        },
        readAt,
      );
    });
    for (const n of nets.networks) store.noteNetwork('projects', n.members, n.root, n.rootStorage, n.poolBytes);
    for (const kind of plan.move.kinds) for (const source of plan.move.from) store.finishRound(kind, source, 1);
    store.setGivenList({ ...o.list, seededAt: readAt });
    store.appendEvent(
      'list.seeded',
      {
        file: o.list.file,
        digest: o.list.digest,
        items: o.items.length,
        skipped,
        networks: nets.networks.length,
        unknownForks: nets.unknownForks,
      },
      readAt,
    );
  });
  deps.log.info({ file: o.list.file, items: o.items.length }, 'reviewed item list seeded');
  return { unknownForks: nets.unknownForks };
}
