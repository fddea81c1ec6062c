/**
 * Fakes for the runtime's and the step actors' unit tests: an in-memory InstanceApi with
 * just enough behaviour, a silent logger and a manual clock (tests use a real `:memory:` checkpoint).
 */
import pino from 'pino';
import type { Logger } from 'pino';
import type { GeoSite, InstanceApi, KindAccessMode, MoveRecord, Readiness, TokenInfo } from '../../src/api/types.js';
import { FakeClock } from './fake-clock.js';
import type { Kind, Plan } from '../../src/plan/types.js';

export interface FakeApiState {
  version: string;
  user: { id: number; username: string; isAdmin: boolean };
  token: TokenInfo | null;
  readiness: Readiness;
  weights: Record<string, number>;
  /** Weights the server reports after a write, when it does not keep what it was sent. */
  brokenWeights?: Record<string, number>;
  moves: MoveRecord[];
  geoErrors: Record<string, string[]>;
  /** What GET /geo_sites (or /geo_nodes) lists (null: both 404, no Geo API). Default: a primary and one secondary. */
  geoSites: GeoSite[] | null;
  /** Thrown by the node proxy for these site ids (e.g. a 404 for an unknown site). */
  geoSiteErrors: Record<number, Error>;
  /** Site ids the primary cannot reach: its node proxy answers `200 {}` (nothing forwarded). */
  geoUnreachable?: number[];
  /** Site ids whose GraphQL has no geoRegistriesBulkUpdate (a release before 16.4). */
  geoUnsupported?: number[];
  /** Thrown by every admin-only call (settings, token inspection), e.g. GitLab's 403 under Admin Mode. */
  adminError?: Error;
  /** Thrown by the readiness probe (e.g. a 404 outside the monitoring allowlist). */
  readinessError?: Error;
  /** What the pre-flight probe says per kind (absent: listing). */
  access?: Partial<Record<Kind, KindAccessMode>>;
  calls: string[];
  mutating: number;
}

export function createFakeApi(overrides: Partial<FakeApiState> = {}): InstanceApi & { state: FakeApiState } {
  const state: FakeApiState = {
    version: '17.11.0',
    user: { id: 1, username: 'root', isAdmin: true },
    token: { id: 1, userId: 1, name: 'ops', scopes: ['api', 'sudo'], revoked: false, expiresAt: '2099-01-01' },
    readiness: {
      status: 'ok',
      gitaly: ['default', 'nfs-1', 'nfs-2', 'cluster'].map((storage) => ({ storage, ok: true, message: null })),
    },
    weights: { default: 100 },
    moves: [],
    geoErrors: {},
    geoSites: [
      { id: 1, name: 'primary', url: 'https://primary.test', primary: true, enabled: true },
      { id: 2, name: 'secondary', url: 'https://secondary.test', primary: false, enabled: true },
    ],
    geoSiteErrors: {},
    calls: [],
    mutating: 0,
    ...overrides,
  };
  const call = (name: string) => state.calls.push(name);
  return {
    state,
    async version() {
      call('version');
      return { version: state.version, enterprise: true };
    },
    async currentUser() {
      call('currentUser');
      return state.user;
    },
    async kindAccess(kind) {
      call('kindAccess');
      return { mode: state.access?.[kind] ?? 'listing', reason: state.access?.[kind] ? `${kind}: fake probe` : null };
    },
    async inspectToken() {
      call('inspectToken');
      if (state.adminError) throw state.adminError;
      return state.token;
    },
    async readiness() {
      call('readiness');
      if (state.readinessError) throw state.readinessError;
      return state.readiness;
    },
    async getWeights() {
      call('getWeights');
      if (state.adminError) throw state.adminError;
      return { ...state.weights };
    },
    async setWeights(w) {
      call('setWeights');
      state.mutating += 1;
      state.weights = state.brokenWeights ? { ...state.brokenWeights } : { ...w };
      return { ...state.weights };
    },
    // eslint-disable-next-line require-yield
    async *listItemsOnStorage() {
      call('listItemsOnStorage');
    },
    async countItemsOnStorage() {
      call('countItemsOnStorage');
      return 0;
    },
    async getItem() {
      call('getItem');
      return null;
    },
    async findProject() {
      call('findProject');
      return null;
    },
    async repositoryFingerprint() {
      call('repositoryFingerprint');
      return null;
    },
    async getNamespace() {
      call('getNamespace');
      return null;
    },
    async scheduleMove() {
      throw new Error('the fake api does not move');
    },
    async scheduleBulk() {
      throw new Error('the fake api does not move');
    },
    async queueMetrics() {
      return { queues: {} };
    },
    async listItemMoves() {
      return [];
    },
    async listMoves(kind, page, perPage) {
      call(`listMoves:${kind}:${page}`);
      const all = state.moves.filter((m) => m.kind === kind);
      const slice = all.slice((page - 1) * perPage, page * perPage);
      return { moves: slice, nextPage: page * perPage < all.length ? page + 1 : null };
    },
    async getMove() {
      return null;
    },
    async geoSites() {
      call('geoSites');
      return state.geoSites === null ? null : state.geoSites.map((site) => ({ ...site }));
    },
    async geoResync(siteId, classes) {
      call(`geoResync:${siteId}`);
      state.mutating += 1;
      const failure = state.geoSiteErrors[siteId];
      if (failure) throw failure;
      if (state.geoUnreachable?.includes(siteId))
        return classes.map((registryClass) => ({
          registryClass,
          errors: ['no answer through the node proxy (200 {})'],
          forwarded: false,
        }));
      if (state.geoUnsupported?.includes(siteId))
        return classes.map((registryClass) => ({
          registryClass,
          errors: ["Field 'geoRegistriesBulkUpdate' doesn't exist on type 'Mutation'"],
          forwarded: true,
          unsupported: true as const,
        }));
      return classes.map((registryClass) => ({
        registryClass,
        errors: state.geoErrors[registryClass] ?? [],
        forwarded: true,
      }));
    },
    stats() {
      return { requests: state.calls.length, mutating: state.mutating };
    },
    async close() {
      call('close');
    },
  };
}

/** A clock that tests move by hand (`advance`); sleeps resolve at once, moving time, unless aborted. */
export function createManualClock(start = Date.parse('2026-11-22T12:00:00Z')): FakeClock {
  return new FakeClock(start);
}

export const silentLogger: Logger = pino({ level: 'silent' });

/** A valid plan for tests (the token is a made-up value). */
export function testPlan(overrides: Partial<Plan> = {}): Plan {
  return {
    version: 1,
    name: 'test-plan',
    instance: {
      url: 'http://127.0.0.1:1',
      credentials: { type: 'token', token: 'glpat-fake-test-token-000000001' },
      sudo: null,
      timeoutMs: 5_000,
      outageWaitMs: 1_800_000,
    },
    move: {
      from: ['nfs-1', 'nfs-2'],
      to: ['cluster'],
      kinds: ['projects', 'snippets', 'groups'],
      mode: 'throttled',
      concurrency: 4,
      queueAhead: 0,
      // The fake actors drain one (source, kind) per call, as the machine invokes them by kind.
      order: 'by-kind',
    },
    weights: { cluster: 100, 'nfs-1': 0, 'nfs-2': 0, default: 0 },
    poll: {
      intervalMs: 10,
      minIntervalMs: 10,
      stuckScheduledAfterMs: 86_400_000,
      stuckRunningAfterMs: 3_600_000,
      stuckRunningPerGbMs: 1_800_000,
    },
    retry: { maxAttempts: 3, backoffMs: 10 },
    verify: true,
    geo: { resync: false },
    ...overrides,
  };
}
