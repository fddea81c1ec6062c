/**
 * `createInstanceApi`: the InstanceApi contract (./types.ts) over the one HTTP client, against
 * GitLab's real endpoints (reference §1, §3, §4, §5, §6, §8, §9). Every method is one logical
 * call; the client retries GETs and PUTs, never POSTs. The calls live by concern beside it:
 * instance-items.ts, instance-kind-access.ts, instance-moves.ts, instance-admin.ts.
 */
import type { Dispatcher } from 'undici';
import type { Credentials } from '../plan/types.js';
import { createCredentialProvider } from './auth.js';
import type { OAuthTokenPair } from './auth.js';
import { createClient, createPool, USER_AGENT } from './client.js';
import { checksApplicationRateLimits, createRatePacer } from './rate-pacer.js';
import { systemClock } from '../shared/clock.js';
import type { RequestEvent, RetryPolicy } from './client.js';
import type { OutageGate } from './outage.js';
import { ApiInvalidResponseError } from './errors.js';
import { adminCalls } from './instance-admin.js';
import { getOrNull } from './instance-read.js';
import { itemCalls } from './instance-items.js';
import { readKindAccess } from './instance-kind-access.js';
import { moveCalls } from './instance-moves.js';
import type { InstanceApi, InstanceVersion } from './types.js';

/** Options of `createInstanceApi`; the plan's `instance` section plus runtime hooks. */
export interface InstanceApiOptions {
  /** Base URL without /api/v4. */
  baseUrl: string;
  credentials: Credentials;
  sudo?: string | null;
  timeoutMs: number;
  /**
   * Dry run: every mutating request fails with SHARDMOVE_DRY_RUN_BLOCKED before it is sent
   * (POST /admin/token only reads and is allowed). An OAuth refresh still happens when the token
   * expires: it changes no repository, and without it the rehearsal could not read at all.
   */
  readOnly?: boolean;
  retry?: Partial<RetryPolicy>;
  /** Moves in flight; sizes the keep-alive pool. */
  concurrency?: number;
  onRequest?: (e: RequestEvent) => void;
  onResponse?: (e: RequestEvent) => void;
  /**
   * OAuth only: the new pair after each refresh, to be written back (refresh tokens are single use).
   * Awaited before the new token is used; if it throws, the request that triggered the refresh fails
   * with that error (the pair in memory is already the new one, so later requests keep working).
   */
  onRefresh?: (pair: OAuthTokenPair) => void | Promise<void>;
  /** OAuth only: refresh this long before expiry (default 60 s). */
  oauthMarginMs?: number;
  /** Aborts in-flight requests and backoff waits (SIGINT/SIGTERM); rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Tests: a MockAgent. */
  dispatcher?: Dispatcher;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  random?: () => number;
  /** Instance outages hold requests instead of failing them (./outage.ts). */
  outage?: OutageGate;
}

type Json = Record<string, unknown>;

/** The InstanceApi over HTTP. `close()` closes the connection pool. */
export function createInstanceApi(opts: InstanceApiOptions): InstanceApi {
  const now = opts.now ?? Date.now;
  // One pool for the API and the OAuth refresh; an injected dispatcher (tests) is not ours to close.
  const dispatcher = opts.dispatcher ?? createPool(opts.timeoutMs, opts.concurrency ?? 10);
  const credentials = createCredentialProvider(opts.credentials, {
    baseUrl: opts.baseUrl,
    dispatcher,
    timeoutMs: opts.timeoutMs,
    userAgent: USER_AGENT,
    now,
    marginMs: opts.oauthMarginMs,
    onRefresh: opts.onRefresh,
  });
  // GitLab's application rate limits: read from the settings, checked by the release from 18.1.
  let checksRateLimits = false;
  const pacer = createRatePacer({
    now,
    sleep: opts.sleep ?? systemClock.sleep,
    // /metadata is under no application limit: its answer's Date re-reads the server's clock.
    probe: async (signal) => void (await c.request({ method: 'GET', path: '/metadata', signal })),
  });
  const c = createClient({
    baseUrl: opts.baseUrl,
    credentials,
    sudo: opts.sudo,
    timeoutMs: opts.timeoutMs,
    readOnly: opts.readOnly,
    retry: opts.retry,
    dispatcher,
    onRequest: opts.onRequest,
    onResponse: opts.onResponse,
    signal: opts.signal,
    sleep: opts.sleep,
    now,
    random: opts.random,
    pacer,
    ...(opts.outage ? { outage: opts.outage } : {}),
  });

  return {
    async version(): Promise<InstanceVersion> {
      // /metadata (15.2+) always says `enterprise`; /version only on some versions.
      const body = ((await getOrNull(c, '/metadata')) ??
        (await c.request({ method: 'GET', path: '/version' })).body) as Json | null;
      const version = body?.['version'];
      if (typeof version !== 'string')
        throw new ApiInvalidResponseError({ method: 'GET', path: '/api/v4/version' }, 'no version');
      const enterprise = body?.['enterprise'];
      checksRateLimits = checksApplicationRateLimits(version);
      return { version, enterprise: typeof enterprise === 'boolean' ? enterprise : null };
    },

    async getWeights() {
      const { body } = await c.request({ method: 'GET', path: '/application/settings' });
      pacer.configure(body, checksRateLimits);
      return parseWeights(body);
    },

    rateHold: () => pacer.hold(),
    rateLimits: () => pacer.limits(),

    async setWeights(weights) {
      const { body } = await c.request({
        method: 'PUT',
        path: '/application/settings',
        body: { repository_storages_weighted: weights },
      });
      return parseWeights(body);
    },

    kindAccess: (kind, enterprise) => readKindAccess(c, kind, enterprise),
    ...itemCalls(c),
    ...moveCalls(c),
    ...adminCalls(c),
    stats: () => c.stats(),
    async close() {
      if (!opts.dispatcher) await dispatcher.close();
    },
  };
}

function parseWeights(body: unknown): Record<string, number> {
  const w = ((body ?? {}) as Json)['repository_storages_weighted'];
  if (typeof w !== 'object' || w === null)
    throw new ApiInvalidResponseError(
      { method: 'GET', path: '/api/v4/application/settings' },
      'no repository_storages_weighted',
    );
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(w as Json)) out[k] = Number(v);
  return out;
}
