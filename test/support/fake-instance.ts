/**
 * An in-memory InstanceApi with GitLab's move semantics, on a fake clock, for the drain and verify
 * unit tests. Moves progress lazily when time is read: scheduled -> started -> (replicated) ->
 * finished, flipping the item's read-only flag and storage as GitLab does (reference §2). Faults are
 * scripted per item and attempt. It also checks the run's invariants and records every violation.
 */
import { ApiAmbiguousError, ApiHttpError, ApiNotFoundError } from '../../src/api/errors.js';
import { listKeysetIsolating, listOffsetIsolating } from '../../src/api/listing.js';
import type {
  CountItemsOptions,
  InstanceApi,
  InstanceVersion,
  ItemRecord,
  KindAccess,
  ListItemsOptions,
  MovePage,
  MoveRecord,
  NamespaceRecord,
  ScheduleResult,
} from '../../src/api/types.js';
import type { FakeClock } from './fake-clock.js';
import type { RepositoryFingerprint } from '../../src/api/fingerprint.js';
import type { Kind } from '../../src/plan/types.js';

/** What the instance does with one move of an item (per attempt, in order; the last one repeats). */
export type MoveScript =
  | 'ok'
  /** The copy fails: move `failed` with an error message, item stays on the source, writable again. */
  | 'fail'
  /** Replicated then cleanup fails: item on the destination, move `cleanup failed`. */
  | 'cleanup-fail'
  /** The job dies after the switch (track_repository): item on the destination, move `failed`, no message. */
  | 'fail-after-switch'
  /** Never leaves `started`; the item stays read-only. */
  | 'stuck'
  /** `finished` but the storage record never changed (GitLab issue 345591). */
  | 'finished-not-moved';

interface FakeItem {
  kind: Kind;
  id: number;
  storage: string;
  name: string;
  readOnly: boolean;
  /** Reported as `statistics.repository_size` (null: unknown). */
  sizeBytes: number | null;
  /** Projects only: hidden or pending deletion (left out of listings without the flags; GET 404s). */
  hidden?: boolean;
  /** Which of the two (a listing without that flag leaves the project out); absent: hidden. */
  flag?: 'hidden' | 'pending_delete';
  /**
   * Snippets only: listed by /snippets/all but a 404 on GET /snippets/:id for an admin who is not a
   * member (a project snippet whose project has snippets disabled or private to members).
   */
  unreadable?: boolean;
  /** Projects only: the project it was forked from (GitLab's `forked_from_project`). */
  forkedFromId?: number;
}

interface FakeMove extends MoveRecord {
  createdMs: number;
  script: MoveScript;
}

export interface FakeOptions {
  clock: FakeClock;
  /** Time in `scheduled` before `started` (ms). */
  startDelayMs?: number;
  /** Time in `started` before the outcome (ms). */
  durationMs?: number;
  /** Listings ignore the storage filter (a non-admin token). */
  ignoreFilter?: boolean;
  perPage?: number;
  /** `enterprise` in /metadata (default true: an EE build). */
  enterprise?: boolean | null;
  /**
   * Kinds whose storage the instance does not expose (CE snippets and groups): listings ignore the
   * filter and items carry no `repository_storage`, as GitLab CE does.
   */
  unexposed?: Kind[];
  /** False: no group move API (CE, or EE without Premium): group move routes answer 404. */
  groupMoves?: boolean;
  /** False: hidden projects are left out of listings even with include_hidden (an instance that ignores it). */
  listsHidden?: boolean;
  /** The `error_message` of a `fail` script's move (default: a checksum-like text naming the item). */
  failMessage?: string;
  /**
   * How long a bulk POST's job waits in Sidekiq's `default` queue before it schedules its moves
   * (ms; default 0, at once). While it waits, `queueMetrics` shows it.
   */
  bulkDelayMs?: number;
  /** `forbidden`: `GET /sidekiq/queue_metrics` answers 403 (a token or instance that cannot read it). */
  queueMetrics?: 'ok' | 'forbidden';
  /**
   * Time in `started` of a move, from the moves in flight when it was created (itself included): a
   * crude shared disk, where each move's copy slows down as more copies run beside it.
   */
  durationFor?: (inFlight: number) => number;
}

const key = (kind: Kind, id: number) => `${kind}:${id}`;

export class FakeInstance implements InstanceApi {
  readonly items = new Map<string, FakeItem>();
  readonly moves: FakeMove[] = [];
  readonly violations: string[] = [];
  readonly scripts = new Map<string, MoveScript[]>();
  /** Items whose next POST is applied but answered with a network error. */
  readonly ambiguousApplied = new Set<string>();
  /** Items whose next POST is lost (never applied) and answered with a network error. */
  readonly ambiguousLost = new Set<string>();
  /** Items whose next POST is answered 400 with this message (a permanent rejection). */
  readonly rejections = new Map<string, string>();
  /** Time in `started` per item (ms), overriding `durationMs` (a large repository copies longer). */
  readonly durations = new Map<string, number>();
  /** Items whose presence on a listing page turns the whole page into a persistent 500. */
  readonly unrenderable = new Set<string>();
  /** Listing requests (page, perPage or id_after) as sent, for assertions. */
  readonly listings: string[] = [];
  /** Called before every request, with its name (tests abort, add items, count). */
  onRequest: ((name: string, mutating: boolean) => void) | null = null;
  readonly postsPerItem = new Map<string, number>();
  bulkPosts = 0;
  /** Bulk jobs still waiting in the queue, oldest first. */
  readonly bulkQueue: { kind: Kind; source: string; destination: string; enqueuedMs: number }[] = [];
  queueMetricsCalls = 0;
  /** Most moves ever in flight at once. */
  peakInFlight = 0;
  /** Whether a fork was declared: only then do project entities carry the fork fields. */
  private forked = false;
  private reqs = 0;
  private muts = 0;
  private nextMoveId = 1;
  private readonly active = new Set<FakeMove>();
  private readonly startDelay: number;
  private readonly duration: number;

  constructor(private readonly opts: FakeOptions) {
    this.startDelay = opts.startDelayMs ?? 1000;
    this.duration = opts.durationMs ?? 4000;
  }

  addItems(kind: Kind, storage: string, ids: Iterable<number>): void {
    for (const id of ids)
      this.items.set(key(kind, id), { kind, id, storage, name: `${kind}/${id}`, readOnly: false, sizeBytes: null });
  }

  /**
   * Makes project `id` a fork of project `parent`. From the first fork on, every project entity
   * carries `forked_from_project` and `forks_count`, as GitLab renders them for an admin.
   */
  fork(id: number, parent: number): void {
    const it = this.items.get(key('projects', id));
    if (!it) throw new Error('no such project');
    it.forkedFromId = parent;
    this.forked = true;
  }

  /** Sets an item's reported repository size and, optionally, how long its moves run. */
  setSize(kind: Kind, id: number, sizeBytes: number, runMs?: number): void {
    const it = this.items.get(key(kind, id));
    if (!it) throw new Error('no such item');
    it.sizeBytes = sizeBytes;
    if (runMs !== undefined) this.durations.set(key(kind, id), runMs);
  }

  script(kind: Kind, id: number, ...steps: MoveScript[]): void {
    this.scripts.set(key(kind, id), steps);
  }

  item(kind: Kind, id: number): FakeItem | undefined {
    return this.items.get(key(kind, id));
  }

  movesOf(kind: Kind, id: number): FakeMove[] {
    return this.moves.filter((m) => m.kind === kind && m.itemId === id);
  }

  private req(name: string, mutating = false): void {
    this.reqs++;
    if (mutating) this.muts++;
    this.onRequest?.(name, mutating);
    this.advance();
  }

  /** Applies every transition due by now. */
  advance(): void {
    const now = this.opts.clock.now();
    while (this.bulkQueue.length > 0 && now >= (this.bulkQueue[0]?.enqueuedMs ?? 0) + (this.opts.bulkDelayMs ?? 0)) {
      const job = this.bulkQueue.shift()!;
      this.runBulk(job.kind, job.source, job.destination);
    }
    for (const m of [...this.active]) {
      const it = this.items.get(key(m.kind, m.itemId));
      if (!it) continue;
      const age = now - m.createdMs;
      if (m.state === 'scheduled' && age >= this.startDelay) m.state = 'started';
      const duration = this.durations.get(key(m.kind, m.itemId)) ?? this.duration;
      if (m.state !== 'started' || age < this.startDelay + duration || m.script === 'stuck') continue;
      this.active.delete(m);
      it.readOnly = false;
      if (m.script === 'fail') {
        m.state = 'failed';
        m.errorMessage = this.opts.failMessage ?? `Failed to replicate ${m.kind} ${m.itemId}: checksum mismatch`;
      } else if (m.script === 'fail-after-switch') {
        it.storage = m.destinationStorage;
        m.state = 'failed';
      } else if (m.script === 'cleanup-fail') {
        it.storage = m.destinationStorage;
        m.state = 'cleanup failed';
        m.errorMessage = 'Failed to remove the source repository';
      } else {
        if (m.script === 'ok') it.storage = m.destinationStorage;
        m.state = 'finished';
      }
    }
  }

  private createMove(it: FakeItem, destination: string): FakeMove {
    if (it.storage === destination) this.violations.push(`move for ${key(it.kind, it.id)} already on ${destination}`);
    if (this.movesOf(it.kind, it.id).some((m) => this.active.has(m)))
      this.violations.push(`second move in flight for ${key(it.kind, it.id)}`);
    const steps = this.scripts.get(key(it.kind, it.id)) ?? ['ok'];
    const nth = this.movesOf(it.kind, it.id).length;
    const m: FakeMove = {
      id: this.nextMoveId++,
      kind: it.kind,
      itemId: it.id,
      state: 'scheduled',
      sourceStorage: it.storage,
      destinationStorage: destination,
      errorMessage: null,
      createdAt: new Date(this.opts.clock.now()).toISOString(),
      createdMs: this.opts.clock.now(),
      script: steps[Math.min(nth, steps.length - 1)] as MoveScript,
    };
    it.readOnly = true;
    this.moves.push(m);
    this.active.add(m);
    if (this.opts.durationFor) this.durations.set(key(it.kind, it.id), this.opts.durationFor(this.active.size));
    this.peakInFlight = Math.max(this.peakInFlight, this.active.size);
    return m;
  }

  private view(m: FakeMove): MoveRecord {
    const { createdMs: _c, script: _s, ...rec } = m;
    return { ...rec };
  }

  private record(it: FakeItem): ItemRecord {
    const rec: ItemRecord = {
      kind: it.kind,
      id: it.id,
      storage: this.exposes(it.kind) ? it.storage : null,
      name: it.name,
      sizeBytes: it.sizeBytes,
    };
    if (!this.forked || it.kind !== 'projects') return rec;
    let forks = 0;
    for (const other of this.items.values()) if (other.kind === 'projects' && other.forkedFromId === it.id) forks++;
    return { ...rec, forkedFromId: it.forkedFromId ?? null, forksCount: forks };
  }

  async version(): Promise<InstanceVersion> {
    this.req('version');
    return { version: '17.11.0', enterprise: this.opts.enterprise === undefined ? true : this.opts.enterprise };
  }
  async kindAccess(kind: Kind, enterprise: boolean | null): Promise<KindAccess> {
    this.req('kindAccess');
    if (kind === 'projects') return { mode: 'listing', reason: null };
    if (kind === 'groups' && this.opts.groupMoves === false)
      return { mode: 'unsupported', reason: 'no group repository storage moves (fake)' };
    const any = [...this.items.values()].some((i) => i.kind === kind);
    if (!any)
      return enterprise === false
        ? { mode: 'records', reason: 'Community Edition (fake)' }
        : { mode: 'listing', reason: null };
    if (!this.exposes(kind) || this.opts.ignoreFilter) return { mode: 'records', reason: 'storage not exposed (fake)' };
    return { mode: 'listing', reason: null };
  }
  async currentUser() {
    this.req('currentUser');
    return { id: 1, username: 'root', isAdmin: !this.opts.ignoreFilter };
  }
  async inspectToken() {
    this.req('inspectToken');
    return null;
  }
  async readiness() {
    this.req('readiness');
    return { status: 'ok', gitaly: [] };
  }
  async getWeights() {
    this.req('getWeights');
    return {};
  }
  async setWeights(w: Record<string, number>) {
    this.req('setWeights', true);
    return w;
  }

  /** Hides a project (or marks it pending deletion): GitLab's GET /projects/:id then answers 404. */
  hide(id: number, flag: 'hidden' | 'pending_delete' = 'hidden'): void {
    const it = this.items.get(key('projects', id));
    if (!it) throw new Error('no such item');
    it.hidden = true;
    it.flag = flag;
  }

  /** A project snippet GET /snippets/:id does not show to an admin: listed, movable, but read as 404. */
  hideSnippet(id: number): void {
    const it = this.items.get(key('snippets', id));
    if (!it) throw new Error('no such item');
    it.unreadable = true;
  }

  private exposes(kind: Kind): boolean {
    return !(this.opts.unexposed ?? []).includes(kind);
  }

  /** What a filtered listing holds right now, in GitLab's order for the kind. */
  private listable(kind: Kind, storage: string, leaveOut?: 'hidden' | 'pending_delete'): FakeItem[] {
    const filtered = !this.opts.ignoreFilter && this.exposes(kind);
    const all = [...this.items.values()].filter(
      (i) =>
        i.kind === kind &&
        (!filtered || i.storage === storage) &&
        !(i.hidden && this.opts.listsHidden === false) &&
        !(i.hidden && leaveOut !== undefined && (i.flag ?? 'hidden') === leaveOut),
    );
    // /snippets/all: always newest first, order params ignored; projects (keyset) and groups: id ascending.
    return all.sort((a, b) => (kind === 'snippets' ? b.id - a.id : a.id - b.id));
  }

  private page(kind: Kind, items: FakeItem[]): ItemRecord[] {
    if (items.some((i) => this.unrenderable.has(key(kind, i.id)))) {
      throw new ApiHttpError({ method: 'GET', path: `/api/v4/${kind}` }, 500, '500 Internal Server Error', {
        message: '500 Internal Server Error',
      });
    }
    return items.map((i) => this.record(i));
  }

  listItemsOnStorage(kind: Kind, storage: string, opts: ListItemsOptions = {}): AsyncIterable<ItemRecord[]> {
    const perPage = opts.perPage ?? this.opts.perPage ?? 100;
    // The real client's isolation logic over pages computed live, so items added or moved
    // mid-listing shift the pages as on a live instance.
    if (kind === 'projects') {
      return listKeysetIsolating(
        async (q) => {
          this.req('listItemsOnStorage');
          this.listings.push(`id_after=${q.idAfter} per_page=${q.perPage}`);
          const rest = this.listable(kind, storage, opts.leaveOut).filter(
            (i) => i.id > q.idAfter && (q.idBefore === undefined || i.id < q.idBefore),
          );
          return { items: this.page(kind, rest.slice(0, q.perPage)), hasNext: rest.length > q.perPage };
        },
        { kind, perPage, afterId: opts.afterId ?? 0, onUnlistable: opts.onUnlistable },
      );
    }
    return listOffsetIsolating(
      async (page, size) => {
        this.req('listItemsOnStorage');
        this.listings.push(`page=${page} per_page=${size}`);
        const all = this.listable(kind, storage);
        return { items: this.page(kind, all.slice((page - 1) * size, page * size)), hasNext: all.length > page * size };
      },
      { kind, perPage, onUnlistable: opts.onUnlistable },
    );
  }

  /** Counted as GitLab's x-total of an offset page: null above 10,000 records; a 500 if the page's one project breaks it. */
  async countItemsOnStorage(storage: string, opts: CountItemsOptions): Promise<number | null> {
    this.req('countItemsOnStorage');
    this.listings.push(
      `count id_after=${opts.afterId} id_before=${opts.beforeId ?? ''} without=${opts.leaveOut ?? ''}`,
    );
    const rows = this.listable('projects', storage, opts.leaveOut).filter(
      (i) => i.id > opts.afterId && (opts.beforeId === undefined || i.id < opts.beforeId),
    );
    this.page('projects', rows.slice(0, 1));
    return rows.length > 10_000 ? null : rows.length;
  }

  async getItem(kind: Kind, id: number): Promise<ItemRecord | null> {
    this.req('getItem');
    const it = this.items.get(key(kind, id));
    return it && !it.hidden && !it.unreadable ? this.record(it) : null;
  }

  /** Fingerprints of projects' repositories (default: derived from the id); tests change them to fake a drift. */
  readonly fingerprints = new Map<number, RepositoryFingerprint>();

  async repositoryFingerprint(id: number): Promise<RepositoryFingerprint | null> {
    this.req('repositoryFingerprint');
    const it = this.items.get(key('projects', id));
    if (!it || it.hidden || it.unreadable) return null;
    const known = this.fingerprints.get(id);
    return known
      ? { ...known }
      : { defaultBranch: 'main', head: `head-of-${id}`, branches: 1 + (id % 3), tags: id % 4 };
  }

  async findProject(ref: number | string): Promise<ItemRecord | 'hidden' | null> {
    this.req('findProject');
    const it =
      typeof ref === 'number'
        ? this.items.get(key('projects', ref))
        : [...this.items.values()].find((i) => i.kind === 'projects' && i.name.toLowerCase() === ref.toLowerCase());
    if (!it) return null;
    return it.hidden || it.unreadable ? 'hidden' : this.record(it);
  }

  async getNamespace(fullPath: string): Promise<NamespaceRecord | null> {
    this.req('getNamespace');
    const ns = fullPath.toLowerCase();
    const inIt = [...this.items.values()].some(
      (i) => i.name.toLowerCase() === ns || i.name.toLowerCase().startsWith(`${ns}/`),
    );
    return inIt ? { id: 0, kind: 'group', fullPath } : null;
  }

  async scheduleMove(kind: Kind, itemId: number, destination: string): Promise<ScheduleResult> {
    this.req('scheduleMove', true);
    const k = key(kind, itemId);
    this.postsPerItem.set(k, (this.postsPerItem.get(k) ?? 0) + 1);
    const it = this.items.get(k);
    const ref = { method: 'POST', path: `/${kind}/${itemId}/repository_storage_moves` };
    if (!it) throw new ApiNotFoundError(ref, `404 ${kind} Not Found`, null);
    if (this.ambiguousLost.delete(k)) throw new ApiAmbiguousError(ref, null, 'socket hang up');
    const rejection = this.rejections.get(k);
    if (rejection) throw new ApiHttpError(ref, 400, rejection, { message: rejection });
    if (it.readOnly) return { outcome: 'read-only' };
    const m = this.createMove(it, destination);
    if (this.ambiguousApplied.delete(k)) throw new ApiAmbiguousError(ref, null, 'socket hang up');
    return { outcome: 'scheduled', move: this.view(m) };
  }

  /** Starts a move the way someone else would (another operator, the UI), outside the run. */
  startForeignMove(kind: Kind, itemId: number, destination: string): MoveRecord {
    const it = this.items.get(key(kind, itemId));
    if (!it) throw new Error('no such item');
    return this.view(this.createMove(it, destination));
  }

  async scheduleBulk(kind: Kind, source: string, destination: string): Promise<void> {
    this.req('scheduleBulk', true);
    this.noGroupMoves(kind);
    this.bulkPosts++;
    if ((this.opts.bulkDelayMs ?? 0) > 0) {
      this.bulkQueue.push({ kind, source, destination, enqueuedMs: this.opts.clock.now() });
      return;
    }
    this.runBulk(kind, source, destination);
  }

  /** The bulk worker skips read-only items (validation) and items no longer on the source. */
  private runBulk(kind: Kind, source: string, destination: string): void {
    for (const it of [...this.items.values()].sort((a, b) => a.id - b.id))
      if (it.kind === kind && it.storage === source && !it.readOnly) this.createMove(it, destination);
  }

  async queueMetrics(): Promise<{ queues: Record<string, { backlog: number; latency: number }> }> {
    this.req('queueMetrics');
    this.queueMetricsCalls++;
    const ref = { method: 'GET', path: '/api/v4/sidekiq/queue_metrics' };
    if (this.opts.queueMetrics === 'forbidden')
      throw new ApiHttpError(ref, 403, '403 Forbidden', { message: '403 Forbidden' });
    const oldest = this.bulkQueue[0];
    const latency = oldest ? Math.trunc((this.opts.clock.now() - oldest.enqueuedMs) / 1000) : 0;
    return { queues: { default: { backlog: this.bulkQueue.length, latency }, mailers: { backlog: 0, latency: 0 } } };
  }

  async listItemMoves(kind: Kind, itemId: number): Promise<MoveRecord[]> {
    this.req('listItemMoves');
    this.noGroupMoves(kind);
    // The move routes find hidden and pending-delete projects too; an unknown item is a 404.
    if (!this.items.has(key(kind, itemId)))
      throw new ApiNotFoundError(
        { method: 'GET', path: `/api/v4/${kind}/${itemId}/repository_storage_moves` },
        `404 ${kind} Not Found`,
        null,
      );
    return this.movesOf(kind, itemId)
      .reverse()
      .map((m) => this.view(m));
  }

  private noGroupMoves(kind: Kind): void {
    if (kind === 'groups' && this.opts.groupMoves === false)
      throw new ApiNotFoundError(
        { method: 'GET', path: '/api/v4/group_repository_storage_moves' },
        '404 Not Found',
        null,
      );
  }

  async listMoves(kind: Kind, page: number, perPage: number): Promise<MovePage> {
    this.req('listMoves');
    this.noGroupMoves(kind);
    const all = this.moves.filter((m) => m.kind === kind);
    const start = all.length - page * perPage;
    const slice = all.slice(Math.max(0, start), start + perPage).reverse();
    return { moves: slice.map((m) => this.view(m)), nextPage: start > 0 ? page + 1 : null };
  }

  async getMove(kind: Kind, moveId: number): Promise<MoveRecord | null> {
    this.req('getMove');
    const m = this.moves.find((x) => x.kind === kind && x.id === moveId);
    return m ? this.view(m) : null;
  }

  async geoSites() {
    this.req('geoSites');
    return [
      { id: 1, name: 'primary', url: 'http://primary.test', primary: true, enabled: true },
      { id: 2, name: 'secondary', url: 'http://secondary.test', primary: false, enabled: true },
    ];
  }

  async geoResync(_siteId: number, classes: string[]) {
    this.req('geoResync', true);
    return classes.map((registryClass) => ({ registryClass, errors: [], forwarded: true }));
  }

  stats() {
    return { requests: this.reqs, mutating: this.muts };
  }

  /** Number of moves currently not terminal (for concurrency assertions). */
  inFlightCount(): number {
    this.advance();
    return this.active.size;
  }

  async close(): Promise<void> {}
}
