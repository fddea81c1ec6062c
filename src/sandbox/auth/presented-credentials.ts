/**
 * What credentials a request presents, read from headers, parameters and cookies. Pure: no lookups.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Name of the session cookie (the spec's name; GitLab calls it `_gitlab_session`). */
export const SESSION_COOKIE = '_service_session';

/**
 * A value that was present but unusable (an array or object where a string belongs). It never
 * matches a stored credential, so it ends in 401 like any other invalid token.
 */
export const UNUSABLE = Symbol('unusable credential');
/** A presented credential value, or the marker for an unusable one. */
export type Presented = string | typeof UNUSABLE;

/** Every credential a request carries, by the way it was passed. */
export interface PresentedCredentials {
  /** PRIVATE-TOKEN header or private_token parameter: access tokens only. */
  privateToken?: Presented;
  /** Authorization: Bearer: OAuth first, then access tokens. */
  bearer?: Presented;
  /** access_token parameter: OAuth first, then access tokens. */
  accessToken?: Presented;
  /** JOB-TOKEN header or job_token parameter. */
  jobToken?: Presented;
  /** The session cookie's value. */
  session?: string;
  /** Deploy-Token header: never accepted by this API. */
  deployToken?: Presented;
  /** Sudo header or sudo parameter. */
  sudo?: Presented;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

/** A parameter as a credential: strings and numbers (Grape coerces) count, blank means absent. */
function param(input: Record<string, unknown>, name: string): Presented | undefined {
  const v = input[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v.trim() === '' ? undefined : v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return UNUSABLE;
}

/**
 * Cookie header parsing (RFC 6265 pairs separated by `;`): names and values are trimmed, a quoted
 * value is unquoted, percent-encoding is decoded when valid, and the first pair of a name wins.
 */
export function parseCookies(header: string | string[] | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (header === undefined) return out;
  const text = Array.isArray(header) ? header.join('; ') : header;
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      value = decodeURIComponent(value);
    } catch {
      // Not valid percent-encoding: keep the raw value, as browsers and Rack do.
    }
    if (name && !out.has(name)) out.set(name, value);
  }
  return out;
}

/**
 * Reads every credential the request presents. A parameter wins over its header, as in GitLab's
 * finders (`params[PRIVATE_TOKEN_PARAM].presence || env[PRIVATE_TOKEN_HEADER].presence`, and
 * `params[SUDO_PARAM] || env[SUDO_HEADER]`).
 */
export function readPresentedCredentials(
  headers: IncomingHttpHeaders,
  input: Record<string, unknown>,
): PresentedCredentials {
  const out: PresentedCredentials = {};
  const privateToken = param(input, 'private_token') ?? header(headers, 'private-token');
  if (privateToken !== undefined) out.privateToken = privateToken;
  const auth = header(headers, 'authorization');
  if (auth) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) out.bearer = m[1] as string;
    else if (/^Bearer\b/i.test(auth)) out.bearer = UNUSABLE;
  }
  const accessToken = param(input, 'access_token');
  if (accessToken !== undefined) out.accessToken = accessToken;
  const jobToken = param(input, 'job_token') ?? header(headers, 'job-token');
  if (jobToken !== undefined) out.jobToken = jobToken;
  const session = parseCookies(headers.cookie).get(SESSION_COOKIE);
  if (session) out.session = session;
  const deployToken = header(headers, 'deploy-token');
  if (deployToken !== undefined) out.deployToken = deployToken;
  const sudo = param(input, 'sudo') ?? header(headers, 'sudo');
  if (sudo !== undefined) out.sudo = sudo;
  return out;
}
