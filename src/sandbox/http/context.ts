/**
 * What a route handler sees (the parsed request, the resolved caller, the service's state) and
 * what it returns (a Reply).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import type { HeaderValue } from './errors.js';
import type { Db, ItemKind, ItemRow, MoveRow } from '../db.js';
import type { InstanceConfig } from '../seed-schema.js';
import type { Faults } from '../faults.js';

export interface UserRow {
  id: number;
  username: string;
  name: string;
  email: string;
  admin: boolean;
  state: string;
  bot: boolean;
  created_at: string;
}

export interface CredentialRow {
  id: number;
  type: string;
  value: string;
  refresh_token: string | null;
  user_id: number | null;
  project_id: number | null;
  group_id: number | null;
  application_id: number | null;
  name: string | null;
  scopes: string;
  expires_at: string | null;
  expires_at_ms: number | null;
  revoked: number;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
  previous_id: number | null;
  extra: string;
}

/** The authenticated caller, after sudo. */
export interface Caller {
  /** The user the request acts as (the sudo target when sudo was used). */
  user: UserRow;
  /** The user the credential belongs to. */
  tokenOwner: UserRow;
  credential: CredentialRow | null;
  method: 'private_token' | 'oauth' | 'job_token' | 'session';
  scopes: string[];
  sudo: boolean;
}

/** What a handler returns; the server serialises it. Errors are thrown as SandboxHttpError instead. */
export interface Reply {
  status?: number;
  /** Serialised as JSON unless `text` is set. `undefined` with status 204 sends no body. */
  body?: unknown;
  /** Plain-text body (health, rate limit). */
  text?: string;
  headers?: Record<string, HeaderValue>;
}

/** Outcome of scheduling one item's move: the new record, or GitLab's validation errors. */
export type ScheduleOutcome = { ok: true; move: MoveRow } | { ok: false; errors: Record<string, string[]> };

/** One storage's room and disk time now, as the sandbox's node_exporter serves them. */
export interface StorageGauge {
  storage: string;
  /** The seeded `instance.storage_capacity`, or null when the storage has none. */
  capacityBytes: number | null;
  /** Bytes its repositories and copies take, moves in flight included; null without a capacity. */
  usedBytes: number | null;
  /** Seconds its disk has been busy with moves since the sandbox started (a counter). */
  ioSeconds: number;
  /** Bytes the moves' copies have read from it since the sandbox started (a counter). */
  readBytes: number;
  /** Bytes the moves' copies have written to it since the sandbox started (a counter). */
  writtenBytes: number;
}

/** The load of the move engine now, for the exporters (../exporters/, ../moves/load.ts). */
export interface EngineLoad {
  storages: StorageGauge[];
  /** Moves that can run at once (Sidekiq's concurrency). */
  workers: number;
  /** Moves holding a worker, by kind. */
  running: Map<ItemKind, number>;
  /** Gitaly's ReplicateRepository calls: in progress, waiting for the repository, started and returned (by code). */
  replication: { inProgress: number; queued: number; started: number; handled: Map<string, number> };
}

/**
 * What handlers ask of the move engine. Declared here, by what the move routes call, so that http/
 * imports nothing above it; moves/engine.ts's MoveEngine satisfies it.
 */
export interface MoveScheduler {
  /** Room and load of every configured storage, jobs and Gitaly calls, at the sandbox clock's now. */
  load(): EngineLoad;
  /**
   * Schedules a move of `item` to `destination` (picked by weight when undefined). Fails with
   * `destination_storage_name: can't be blank` (an empty name) and/or `is not included in the
   * list`, and/or `<kind>: is read-only`.
   */
  schedule(item: ItemRow, destination?: string): ScheduleOutcome;
  /** Records a bulk job (processed in the background, in batches, resumable). */
  scheduleBulk(kind: ItemKind, source: string, destination?: string): void;
}

export interface SandboxState {
  db: Db;
  /** Configuration from the seed's `instance` (re-read at every start). */
  config: InstanceConfig;
  clock: Clock;
  log: Logger;
  engine: MoveScheduler;
  faults: Faults;
}

export interface RequestContext {
  method: string;
  /** Path without query string. */
  path: string;
  url: URL;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Query and body parameters merged the way Grape does (body wins). */
  input: Record<string, unknown>;
  /** Path parameters (`:id`). */
  params: Record<string, string>;
  /** The caller, or null for anonymous requests on public routes. */
  caller: Caller | null;
  /** Base URL of this server, e.g. http://127.0.0.1:4567, for Link headers. */
  origin: string;
  /**
   * The client's address as Node reports it (`::ffff:127.0.0.1` on a dual-stack socket);
   * undefined when the context was not built from a socket (unit tests).
   */
  remoteAddress?: string;
  state: SandboxState;
}
