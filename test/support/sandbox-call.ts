/**
 * One JSON request to a running sandbox, as the HTTP tests make it: `PRIVATE-TOKEN` (the built-in
 * seed's admin token unless another or null is given), a JSON body (a string is sent as it is, for
 * malformed-body cases), and the parsed answer.
 */
import type { RunningSandbox } from '../../src/sandbox/index.js';

/** The built-in seed's admin token with the api and sudo scopes (a sandbox-only value). */
export const SANDBOX_ROOT_TOKEN = 'glpat-sandbox-root-api-sudo-0001';

type Json = Record<string, unknown>;

export async function callSandbox(
  sb: RunningSandbox,
  method: string,
  path: string,
  body?: unknown,
  token: string | null = SANDBOX_ROOT_TOKEN,
) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers['private-token'] = token;
  const payload = body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) };
  const res = await fetch(`${sb.url}/api/v4${path}`, { method, headers, ...payload });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as Json & Json[] };
}
