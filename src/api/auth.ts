/**
 * Credential providers: what the client puts in each request's headers, and what it does when the
 * server answers 401. A static personal access token never changes; an OAuth pair is refreshed
 * before it expires and on the first 401 `invalid_token`, once for all concurrent requests.
 */
import type { Dispatcher } from 'undici';
import type { Credentials } from '../plan/types.js';
import { resolvedSecrets, scrubServerText } from '../secrets/registry.js';
import { ApiUnauthorizedError } from './errors.js';

/** A rotated OAuth pair, handed to `onRefresh` so the runtime can write it back to its token files. */
export interface OAuthTokenPair {
  accessToken: string;
  refreshToken: string;
  /** Absolute expiry of the access token (ms since epoch), or null when the server did not say. */
  expiresAt: number | null;
}

/** What the client asks of the credentials. */
export interface CredentialProvider {
  /** Headers that authenticate one request (called per attempt, so a refreshed token is used at once). */
  headers(): Promise<Record<string, string>>;
  /**
   * The request sent with `sentHeaders` got a 401. Resolve true to have it sent once more (the
   * credentials changed), false to let the 401 stand; reject when a refresh was tried and failed.
   */
  onUnauthorized(err: ApiUnauthorizedError, sentHeaders: Record<string, string>): Promise<boolean>;
  /** Current secret values, so the client can scrub them from anything it reports. */
  secrets(): string[];
}

/** A personal, project, group or impersonation access token, sent as `PRIVATE-TOKEN`. */
export function createStaticTokenProvider(token: string): CredentialProvider {
  return {
    headers: () => Promise.resolve({ 'private-token': token }),
    onUnauthorized: () => Promise.resolve(false),
    secrets: () => [token],
  };
}

/** Options of `createOAuthProvider`. */
export interface OAuthProviderOptions {
  credentials: Extract<Credentials, { type: 'oauth' }>;
  /** Instance base URL (without /api/v4); the refresh goes to `<baseUrl>/oauth/token`. */
  baseUrl: string;
  dispatcher: Dispatcher;
  timeoutMs: number;
  userAgent: string;
  /** Injected clock (ms since epoch). */
  now: () => number;
  /**
   * Refresh this long before the known expiry (default 60 s), but never more than a quarter of the
   * token's lifetime: a token that lives only seconds would otherwise be refreshed before every request.
   */
  marginMs?: number;
  /** Called after every successful refresh, before the new token is used. */
  onRefresh?: (pair: OAuthTokenPair) => void | Promise<void>;
}

/**
 * OAuth bearer token with refresh. The expiry of the token we start with is unknown (the plan holds
 * only the pair), so the first refresh happens on a 401 `invalid_token`; after that, `expires_in`
 * of each answer schedules the next refresh `marginMs` (at most a quarter of the lifetime) ahead of time. Refresh tokens are single use,
 * so at most one refresh runs at a time and concurrent callers share it; the refresh POST itself is
 * never retried (a lost answer would mean a dead pair either way).
 */
export function createOAuthProvider(opts: OAuthProviderOptions): CredentialProvider {
  const margin = opts.marginMs ?? 60_000;
  let accessToken = opts.credentials.accessToken;
  let refreshToken = opts.credentials.refreshToken;
  /** When the next refresh is due: `marginMs` (or a quarter of the lifetime) before expiry; null = unknown. */
  let refreshAt: number | null = null;
  let inFlight: Promise<void> | null = null;

  const refresh = (): Promise<void> => {
    inFlight ??= doRefresh().finally(() => {
      inFlight = null;
    });
    return inFlight;
  };

  async function doRefresh(): Promise<void> {
    const url = new URL(opts.baseUrl);
    const prefix = url.pathname.replace(/\/+$/, '');
    const form = new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: opts.credentials.clientId,
      client_secret: opts.credentials.clientSecret,
      redirect_uri: opts.credentials.redirectUri,
    });
    const ref = { method: 'POST', path: `${prefix}/oauth/token` };
    let status: number;
    let text: string;
    try {
      const res = await opts.dispatcher.request({
        origin: url.origin,
        path: ref.path,
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          'user-agent': opts.userAgent,
        },
        body: form.toString(),
        headersTimeout: opts.timeoutMs,
        bodyTimeout: opts.timeoutMs,
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (cause) {
      const code = (cause as { code?: unknown }).code;
      throw refreshFailure(ref, `refresh request failed${typeof code === 'string' ? ` (${code})` : ''}`, cause);
    }
    if (status !== 200) text = scrubServerText(text, [refreshToken, accessToken, opts.credentials.clientSecret]);
    const body = parseJson(text);
    if (status !== 200 || !isTokenAnswer(body)) {
      const error = typeof body?.['error'] === 'string' ? body['error'] : null;
      throw refreshFailure(
        ref,
        `refresh answered HTTP ${status}${error ? ` ${error}` : ''}; re-authorize and update the token files`,
      );
    }
    accessToken = body.access_token;
    refreshToken = body.refresh_token;
    // Secrets from now on, wherever a server might echo them.
    resolvedSecrets.add(accessToken, refreshToken);
    const now = opts.now();
    const lifetimeMs = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : null;
    const expiresAt = lifetimeMs === null ? null : now + lifetimeMs;
    refreshAt = lifetimeMs === null ? null : now + lifetimeMs - Math.min(margin, lifetimeMs / 4);
    await opts.onRefresh?.({ accessToken, refreshToken, expiresAt });
  }

  return {
    async headers() {
      if (inFlight) await inFlight;
      else if (refreshAt !== null && opts.now() >= refreshAt) await refresh();
      return { authorization: `Bearer ${accessToken}` };
    },
    async onUnauthorized(err, sentHeaders) {
      if (!err.invalidToken) return false;
      // Another request refreshed while this one was out: its token is already the new one.
      if (sentHeaders['authorization'] !== `Bearer ${accessToken}`) return true;
      await refresh();
      return true;
    },
    secrets: () => [accessToken, refreshToken, opts.credentials.clientSecret],
  };
}

/** The provider for a plan's credentials. */
export function createCredentialProvider(
  credentials: Credentials,
  oauth: Omit<OAuthProviderOptions, 'credentials'>,
): CredentialProvider {
  return credentials.type === 'token'
    ? createStaticTokenProvider(credentials.token)
    : createOAuthProvider({ ...oauth, credentials });
}

function refreshFailure(
  ref: { method: string; path: string },
  description: string,
  cause?: unknown,
): ApiUnauthorizedError {
  const err = new ApiUnauthorizedError(ref, `OAuth token refresh failed: ${description}`, null, {
    invalidToken: true,
    description,
    refreshFailed: true,
  });
  if (cause !== undefined) Object.defineProperty(err, 'cause', { value: cause, enumerable: false });
  return err;
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function isTokenAnswer(
  v: Record<string, unknown> | null,
): v is { access_token: string; refresh_token: string; expires_in?: number } {
  return typeof v?.['access_token'] === 'string' && typeof v['refresh_token'] === 'string';
}
