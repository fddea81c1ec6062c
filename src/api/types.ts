/**
 * The contract between the orchestrator's actors and the HTTP client: what the instance can be
 * asked, in the orchestrator's own vocabulary. `createInstanceApi` in ./instance.ts implements it
 * over undici; tests may provide fakes. Every call is one attempt at the HTTP level except where
 * noted (GET/PUT retry on network errors, 5xx and 429); POSTs are never retried here.
 */
import type { Kind } from '../plan/types.js';

/** GitLab's move states, as the API spells them (`cleanup failed` has a space). */
export type MoveState = 'initial' | 'scheduled' | 'started' | 'replicated' | 'finished' | 'failed' | 'cleanup failed';

export const TERMINAL_MOVE_STATES: readonly MoveState[] = ['finished', 'failed', 'cleanup failed'];

export interface MoveRecord {
  id: number;
  kind: Kind;
  /** The project, snippet or group id the move belongs to. */
  itemId: number;
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
  /** Repository size in bytes when the instance reports it, else null. */
  sizeBytes: number | null;
  /** `repository_read_only` when the instance reports it (a move may be running); absent otherwise. */
  readOnly?: boolean;
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

/** A Geo site as `GET /geo_sites` lists it (the fields the resync needs). */
export interface GeoSite {
  id: number;
  name: string;
  url: string;
  primary: boolean;
  enabled: boolean;
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
  version(): Promise<{ version: string }>;
  currentUser(): Promise<CurrentUser>;
  /** POST /admin/token on the given token; null when the instance has no such endpoint (404/405 route, or 422). */
  inspectToken(token: string): Promise<TokenInfo | null>;
  readiness(): Promise<Readiness>;
  getWeights(): Promise<Record<string, number>>;
  /** PUT the full weights object; returns the weights the server now reports. */
  setWeights(weights: Record<string, number>): Promise<Record<string, number>>;
  /**
   * Items of a kind whose repository is on `storage`, in ascending id order, page by page
   * (keyset for projects, offset for snippets and groups), starting after `afterId`.
   */
  listItemsOnStorage(kind: Kind, storage: string, opts?: { afterId?: number; perPage?: number }): AsyncIterable<ItemRecord[]>;
  /** One item, or null on 404. */
  getItem(kind: Kind, id: number): Promise<ItemRecord | null>;
  /** POST /<kind>/:id/repository_storage_moves with an explicit destination. Never retried. */
  scheduleMove(kind: Kind, itemId: number, destination: string): Promise<ScheduleResult>;
  /** POST /<kind>_repository_storage_moves for a whole storage (202). Never retried. */
  scheduleBulk(kind: Kind, source: string, destination: string): Promise<void>;
  /** All moves of one item, newest first. */
  listItemMoves(kind: Kind, itemId: number): Promise<MoveRecord[]>;
  /** One page of all moves of a kind, newest first. */
  listMoves(kind: Kind, page: number, perPage: number): Promise<MovePage>;
  /** One move, or null on 404. */
  getMove(kind: Kind, moveId: number): Promise<MoveRecord | null>;
  /** GET /geo_sites (admin, Premium/Ultimate), every page; null on 404 (no Geo, or a Free/CE instance). */
  geoSites(): Promise<GeoSite[] | null>;
  /**
   * geoRegistriesBulkUpdate RESYNC_ALL for each registry class on Geo site `siteId`, sent through
   * the primary's node proxy (`POST /geo/node_proxy/:id/graphql`): registries live on the
   * secondaries, so a primary's own GraphQL answer proves nothing. Returns GraphQL errors per class;
   * HTTP failures (404 for an unknown site) throw.
   */
  geoResync(siteId: number, registryClasses: string[]): Promise<{ registryClass: string; errors: string[] }[]>;
  /** Count of requests sent so far by kind (mutating or not), for reports and benchmarks. */
  stats(): { requests: number; mutating: number };
  close(): Promise<void>;
}
