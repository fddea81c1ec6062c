/**
 * The contract between the orchestrator's actors and the HTTP client: what the instance can be
 * asked, in the orchestrator's own vocabulary. `createInstanceApi` in ./instance.ts implements it
 * over undici; tests may provide fakes. Every call is one attempt at the HTTP level except where
 * noted (GET/PUT retry on network errors, 5xx and 429); POSTs are never retried here.
 */
import type { Kind } from '../plan/types.js';
import type { RepositoryFingerprint } from './fingerprint.js';
import type { RateHold } from './rate-pacer.js';

/** GitLab's move states, as the API spells them (`cleanup failed` has a space). */
export type MoveState = 'initial' | 'scheduled' | 'started' | 'replicated' | 'finished' | 'failed' | 'cleanup failed';

export const TERMINAL_MOVE_STATES: readonly MoveState[] = ['finished', 'failed', 'cleanup failed'];

export interface MoveRecord {
  id: number;
  kind: Kind;
  /** The project, snippet or group id the move belongs to. */
  itemId: number;
  /** Its name as the move record shows it (path_with_namespace, title or full_path), when shown. */
  itemName?: string | null;
  state: MoveState;
  sourceStorage: string;
  destinationStorage: string;
  /** GitLab's `error_message` (null when absent). */
  errorMessage: string | null;
  createdAt: string;
}

export interface ItemRecord {
  kind: Kind;
  id: number;
  /** `repository_storage` as reported (admins only; null if the field is missing). */
  storage: string | null;
  /** Display name (path_with_namespace, title or full_path). */
  name: string;
  /**
   * Bytes a move copies, as the instance reports them, else null: for a project its repository and
   * its wiki (`statistics.repository_size + wiki_size`), both of which a project move copies.
   */
  sizeBytes: number | null;
  /** Projects: the wiki's part of `sizeBytes` (`statistics.wiki_size`), when reported. */
  wikiBytes?: number;
  /**
   * Projects: the id of the project this one was forked from (`forked_from_project.id`, rendered
   * for callers who can read it), null when it is no fork or the field is absent. Others: absent.
   */
  forkedFromId?: number | null;
  /**
   * Projects: `forks_count`, the number of direct forks, when above 0; null when the instance left
   * the field out (a caller without `read_code`): unknown, not 0. Absent: 0.
   */
  forksCount?: number | null;
  /** Snippets: `project_id`, the project a project snippet belongs to (null: a personal snippet). */
  projectId?: number | null;
  /** Snippets: `author.username`, whose personal namespace a personal snippet follows (`move.select`). */
  author?: string | null;
}

/** A namespace as `GET /namespaces/:id` shows it: a group (subgroups included) or a user's own. */
export interface NamespaceRecord {
  id: number;
  kind: 'group' | 'user' | string;
  fullPath: string;
}

/**
 * Something a listing could not read: a page kept answering 500 even one item at a time
 * (./listing.ts). `id` is the item that breaks it when keyset narrowing could name it, else null;
 * `afterId`/`beforeId` are the ids listed just before and just after it (null when unknown), in the
 * listing's own order.
 */
export interface UnlistableGap {
  kind: Kind;
  id: number | null;
  afterId: number | null;
  beforeId: number | null;
  reason: string;
}

/** Options of `listItemsOnStorage`. */
export interface ListItemsOptions {
  /** Keyset listings (projects) only: start after this id. Offset listings always start at page 1. */
  afterId?: number;
  perPage?: number;
  /** Called for every part of the listing that could not be read (the rest is still listed). */
  onUnlistable?: (gap: UnlistableGap) => void;
  /**
   * Projects only (a dry run's census): list as GitLab does without this flag, leaving out the
   * projects that carry it, and without statistics. Absent: both flags, every project listed.
   */
  leaveOut?: 'hidden' | 'pending_delete';
}

/** Options of `countItemsOnStorage`. */
export interface CountItemsOptions {
  /** Only ids greater than this. */
  afterId: number;
  /** Only ids smaller than this; absent: no upper bound. */
  beforeId?: number;
  /** Count as GitLab lists without this flag (the projects carrying it left out). */
  leaveOut?: 'hidden' | 'pending_delete';
}

/** What `GET /metadata` (15.2+) or `GET /version` says about the instance. */
export interface InstanceVersion {
  version: string;
  /** True for an EE build, false for CE; null when the instance does not say. */
  enterprise: boolean | null;
}

/**
 * How the orchestrator can learn which items of a kind are on a storage:
 * - `listing`: the storage-filtered listing works and shows `repository_storage` (EE, 16.3+ for snippets);
 * - `records`: the move API exists but the instance does not expose storage for this kind (CE, a
 *   version without `/snippets/all` or without the filter): move with the bulk POST and follow the
 *   move records it creates;
 * - `unsupported`: the instance has no move API for this kind (group moves on CE). EE Free has one
 *   and may still hold group wikis (a lapsed licence), so its groups go by `records`.
 */
export type KindAccessMode = 'listing' | 'records' | 'unsupported';

export interface KindAccess {
  mode: KindAccessMode;
  /** Why the mode is not `listing`, in words for the operator (null for `listing`). */
  reason: string | null;
}

export interface TokenInfo {
  id: number;
  userId: number | null;
  name: string | null;
  scopes: string[];
  revoked: boolean;
  /** YYYY-MM-DD or null. */
  expiresAt: string | null;
}

export interface StorageHealth {
  storage: string;
  ok: boolean;
  message: string | null;
}

export interface Readiness {
  /** Top-level status (can be "ok" with a failed storage: never trust it alone). */
  status: string;
  gitaly: StorageHealth[];
}

export interface CurrentUser {
  id: number;
  username: string;
  isAdmin: boolean;
}

/**
 * `GET /sidekiq/queue_metrics` (administrators): every Sidekiq queue by name, its `backlog` (jobs
 * waiting) and `latency` (whole seconds since its oldest waiting job was enqueued, 0 when none).
 */
export interface QueueMetrics {
  queues: Record<string, { backlog: number; latency: number }>;
}

/** A Geo site as `GET /geo_sites` lists it (the fields the resync needs). */
export interface GeoSite {
  id: number;
  name: string;
  url: string;
  primary: boolean;
  enabled: boolean;
  /** The API that listed it: `geo_nodes` where `/geo_sites` does not exist yet (before 16.0). */
  listedBy?: 'geo_sites' | 'geo_nodes';
}

/** Result of scheduling one item's move. */
export type ScheduleResult =
  | { outcome: 'scheduled'; move: MoveRecord }
  /** 400 `is read-only`: a move is probably already running for the item; adopt it. */
  | { outcome: 'read-only' };

export interface MovePage {
  moves: MoveRecord[];
  /** Next page number, or null when this was the last page. */
  nextPage: number | null;
}

export interface InstanceApi {
  /**
   * What holds this process's GETs back now: the instance's application rate limit on a route, and
   * until when (./rate-pacer.ts); null when nothing does. Absent on fakes without the limits.
   */
  rateHold?(): RateHold | null;
  /** The application rate limits this process paces by (key to threshold, budget, window); absent on fakes. */
  rateLimits?(): Record<string, { limit: number; budget: number; intervalMs: number }>;
  version(): Promise<InstanceVersion>;
  currentUser(): Promise<CurrentUser>;
  /** POST /admin/token on the given token; null when the instance has no such endpoint (404/405 route, or 422). */
  inspectToken(token: string): Promise<TokenInfo | null>;
  readiness(): Promise<Readiness>;
  getWeights(): Promise<Record<string, number>>;
  /** PUT the full weights object; returns the weights the server now reports. */
  setWeights(weights: Record<string, number>): Promise<Record<string, number>>;
  /**
   * Items of a kind whose repository is on `storage`, page by page. Projects: keyset by id
   * ascending, from `afterId`, hidden and pending-delete projects included where the instance
   * honours the flags. Snippets and groups: offset pages in the instance's own order (snippets come
   * newest first whatever is asked), always from page 1; an offset listing over a set that changes
   * while it is read can skip or repeat items, so callers must not take absence as proof.
   * Pages that keep failing are narrowed down and reported through `onUnlistable`.
   */
  listItemsOnStorage(kind: Kind, storage: string, opts?: ListItemsOptions): AsyncIterable<ItemRecord[]>;
  /**
   * How many projects are on `storage` with ids in (`afterId`, `beforeId`), both flags sent unless
   * `leaveOut` names one: the `x-total` of one offset page of one project. Null when the instance
   * sends no total (GitLab leaves it out above 10,000 records).
   */
  countItemsOnStorage(storage: string, opts: CountItemsOptions): Promise<number | null>;
  /**
   * Read-only probe of how items of `kind` can be found by storage (pre-flight and dry run). An
   * instance with no items of the kind shows nothing to judge by: `enterprise === false` (CE) then
   * decides `records`, anything else `listing`.
   */
  kindAccess(kind: Kind, enterprise: boolean | null): Promise<KindAccess>;
  /**
   * One item, or null on 404 (hidden and pending-delete projects answer 404 too, even to admins).
   * `statistics`: a project with its sizes (`statistics=true`, for administrators), as the listing has them.
   */
  getItem(kind: Kind, id: number, opts?: { statistics?: boolean }): Promise<ItemRecord | null>;
  /**
   * A project by id or full path (`move.select` names), for pre-flight: the project, `hidden` when
   * `GET /projects/:id` answers 404 but the move API finds it (hidden or pending deletion: GitLab's
   * move routes find those), or null when neither knows it.
   */
  findProject(ref: number | string): Promise<ItemRecord | 'hidden' | null>;
  /** A project repository's HEAD, branch and tag counts (./fingerprint.ts); null when the project is not found. */
  repositoryFingerprint(id: number): Promise<RepositoryFingerprint | null>;
  /** `GET /namespaces/:id` by full path (a group's or a user's), or null on 404. */
  getNamespace(fullPath: string): Promise<NamespaceRecord | null>;
  /** POST /<kind>/:id/repository_storage_moves with an explicit destination. Never retried. */
  scheduleMove(kind: Kind, itemId: number, destination: string): Promise<ScheduleResult>;
  /** POST /<kind>_repository_storage_moves for a whole storage (202). Never retried. */
  scheduleBulk(kind: Kind, source: string, destination: string): Promise<void>;
  /**
   * All moves of one item, newest first; an item that does not exist throws (404). Works for hidden
   * and pending-delete projects, which `getItem` cannot see.
   */
  listItemMoves(kind: Kind, itemId: number): Promise<MoveRecord[]>;
  /** One page of all moves of a kind, newest first. */
  listMoves(kind: Kind, page: number, perPage: number): Promise<MovePage>;
  /** One move, or null on 404. */
  getMove(kind: Kind, moveId: number): Promise<MoveRecord | null>;
  /**
   * GET /sidekiq/queue_metrics (admin): how a bulk move's job waits, which nothing else in the API
   * shows. Throws on any failure (403 for a token that is not an administrator's).
   */
  queueMetrics(): Promise<QueueMetrics>;
  /**
   * GET /geo_sites (admin, EE), every page; where it is 404 (before 16.0) GET /geo_nodes, the older
   * API over the same sites; null only when both are 404 (no Geo API: the Community Edition).
   */
  geoSites(): Promise<GeoSite[] | null>;
  /**
   * geoRegistriesBulkUpdate RESYNC_ALL for each registry class on Geo site `siteId`, sent through
   * the primary's node proxy (`POST /geo/node_proxy/:id/graphql`): registries live on the
   * secondaries, so a primary's own GraphQL answer proves nothing. Returns GraphQL errors per class;
   * HTTP failures (404 for an unknown site) throw. `forwarded` is false when the proxy answered
   * without the mutation's result: GitLab answers `200 {}` when it could not reach the secondary
   * (ee/lib/api/geo.rb, Geo::RequestService returning false).
   */
  geoResync(siteId: number, registryClasses: string[]): Promise<GeoResyncResult[]>;
  /** Count of requests sent so far by kind (mutating or not), for reports and benchmarks. */
  stats(): { requests: number; mutating: number };
  close(): Promise<void>;
}

/** One registry class's answer to a resync: GraphQL's errors, and whether the secondary answered at all. */
export interface GeoResyncResult {
  registryClass: string;
  errors: string[];
  forwarded: boolean;
  /** The secondary's GraphQL schema has no `geoRegistriesBulkUpdate` (a release before 16.4): nothing was enqueued. */
  unsupported?: true;
}
