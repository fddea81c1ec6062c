/**
 * The HTTP front of the reference service: faults first, then parsing (query and body merged as
 * Grape does), routing, authentication per route, the handler, and a JSON answer. Client input
 * never produces a 500: every parse problem is a 4xx with a JSON body.
 *
 * It sits above http/ and auth/ because it composes them: http/ holds what every handler shares
 * (context, errors, router), auth/ builds on that, and this listener calls both.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller, RequestContext, SandboxState, Reply } from './http/context.js';
import { SandboxHttpError } from './http/errors.js';
import { authenticate } from './auth/authenticate.js';
import { atLeast, parseRelease } from './auth/token-types.js';
import type { Router } from './http/router.js';
import { checkRateLimit } from './instance/rate-limits.js';

/** Request bodies above this size are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

export function createRequestListener(state: SandboxState, router: Router, origin: () => string) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(state, router, origin(), req, res).catch((err: unknown) => {
      state.log.error({ err }, 'request handling failed');
      if (!res.headersSent && !res.destroyed)
        send(res, req.method ?? 'GET', { status: 500, body: { message: '500 Internal Server Error' } });
    });
  };
}

async function handle(
  state: SandboxState,
  router: Router,
  origin: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  if (await state.faults.onRequest(req, res)) {
    req.resume();
    return;
  }
  let reply: Reply;
  try {
    reply = await dispatch(state, router, origin, req, method);
  } catch (err) {
    if (err instanceof SandboxHttpError) reply = { status: err.status, body: err.body, headers: err.headers };
    else {
      state.log.error({ err, method, path: pathOnly(req.url) }, 'handler failed');
      reply = { status: 500, body: { message: '500 Internal Server Error' } };
    }
  }
  // `Date` on the sandbox's clock, as a server's answers carry its own time (GitLab's rate limit
  // windows follow it, and clients read them from it).
  send(res, method, { ...reply, headers: { date: new Date(state.clock.now()).toUTCString(), ...reply.headers } });
}

async function dispatch(
  state: SandboxState,
  router: Router,
  origin: string,
  req: IncomingMessage,
  method: string,
): Promise<Reply> {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', origin);
  } catch {
    await drain(req);
    throw new SandboxHttpError(400, { error: 'malformed request URL' });
  }
  // An `ee/` route on the Community Edition, or a route of a later release, is no route at all
  // (Grape's catch-all 404, before authentication), and no reason for a 405 either.
  const release = parseRelease(state.config.version);
  const match = router.match(
    method,
    url.pathname,
    (route) => !(route.ee && state.config.edition === 'ce') && (route.since === null || atLeast(release, route.since)),
  );
  if (match.kind === 'not-found') {
    await drain(req);
    throw new SandboxHttpError(404, { error: '404 Not Found' });
  }
  if (match.kind === 'method-not-allowed') {
    await drain(req);
    throw new SandboxHttpError(405, { error: '405 Method Not Allowed' }, { allow: match.allowed.join(', ') });
  }
  const body = await readBody(req);
  const input: Record<string, unknown> = { ...parseParams(url.searchParams) };
  // Not Object.assign: a JSON body's own "__proto__" key would become input's prototype, and its
  // contents inherited parameters (even private_token). Such keys are skipped, as in the query.
  for (const [k, v] of Object.entries(body)) if (!isUnsafeKey(k)) input[k] = v;
  const ctx: RequestContext = {
    method,
    path: url.pathname,
    url,
    query: url.searchParams,
    headers: req.headers,
    input,
    params: match.params,
    caller: null as Caller | null,
    origin,
    ...(req.socket.remoteAddress !== undefined ? { remoteAddress: req.socket.remoteAddress } : {}),
    state,
  };
  ctx.caller = authenticate(ctx, match.route.auth);
  // The endpoint's application rate limit comes first in its body, after authentication.
  checkRateLimit(ctx, `${match.route.method} ${match.route.pattern}`);
  return await match.route.handler(ctx);
}

function send(res: ServerResponse, method: string, reply: Reply): void {
  if (res.destroyed) return;
  const status = reply.status ?? 200;
  const headers: Record<string, string | string[]> = { ...(reply.headers ?? {}) };
  let payload = '';
  if (reply.text !== undefined) {
    payload = reply.text;
    headers['content-type'] ??= 'text/plain; charset=utf-8';
  } else if (status !== 204 && reply.body !== undefined) {
    payload = JSON.stringify(reply.body);
    headers['content-type'] = 'application/json';
  }
  // Encoded once here: a string body is measured, then encoded again by the socket's writev into
  // a scratch buffer; a Buffer goes out as it is (listing pages are 20-100 KB, this is their hot path).
  const bytes = Buffer.from(payload);
  headers['content-length'] = String(bytes.length);
  res.writeHead(status, headers);
  res.end(method === 'HEAD' ? undefined : bytes);
}

async function drain(req: IncomingMessage): Promise<void> {
  req.resume();
  if (req.readableEnded) return;
  await new Promise<void>((resolve) => {
    req.on('end', resolve);
    req.on('error', () => resolve());
    req.on('close', () => resolve());
  });
}

/**
 * The whole body, or null when the client hung up before its end. Listeners rather than `for
 * await`: an async iterator per request (most have no body at all) was a visible share of a
 * move's CPU. The listeners are inline and stay on the request (it is done with when this settles):
 * a named closure costs a `__name` call per request under tsx.
 */
function readChunks(req: IncomingMessage): Promise<{ chunks: Buffer[]; size: number } | null> {
  return new Promise((resolve) => {
    // Gone already (the socket reset while a fault's latency held the request): no event will come.
    if (req.destroyed) {
      resolve(null);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Past the limit the rest is read and dropped, so the answer (413) goes out on a drained request.
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    // 'close' comes after 'end' on a whole request; before it, the body was cut short.
    req.on('end', () => resolve({ chunks, size }));
    req.on('error', () => resolve(null));
    req.on('close', () => resolve(null));
  });
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readChunks(req);
  // The client hung up mid-body: its input, not a handler failure (and no one is left to answer).
  if (body === null) throw new SandboxHttpError(400, { error: 'request body was cut short' });
  const { chunks, size } = body;
  if (size > MAX_BODY_BYTES)
    throw new SandboxHttpError(413, { error: `request body is larger than ${MAX_BODY_BYTES} bytes` });
  if (size === 0) return {};
  const text = Buffer.concat(chunks).toString('utf8');
  const type =
    String(req.headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim()
      .toLowerCase() ?? '';
  if (type === 'application/x-www-form-urlencoded') return parseParams(new URLSearchParams(text));
  if (type === 'application/json' || type === '' || type.endsWith('+json')) {
    if (text.trim() === '') return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new SandboxHttpError(400, { error: `body is not valid JSON: ${(err as Error).message}` });
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new SandboxHttpError(400, { error: 'body must be a JSON object' });
    }
    return parsed as Record<string, unknown>;
  }
  if (type === 'multipart/form-data')
    throw new SandboxHttpError(415, { error: 'multipart bodies are not supported; send JSON' });
  // Other types (text/plain ...) carry no parameters.
  return {};
}

/**
 * Rack-style parameter parsing: `a=1`, `a[]=1&a[]=2` (array), `a[b]=1` (hash). Later values win.
 * Keys that would collide in shape (`a=1&a[b]=2`) keep the last form; nothing throws.
 */
export function parseParams(params: URLSearchParams): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [rawKey, value] of params) {
    const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(rawKey);
    if (!m || !m[2]) {
      if (!isUnsafeKey(rawKey)) out[rawKey] = value;
      continue;
    }
    const base = m[1] as string;
    const parts = [...m[2].matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1] as string);
    if (isUnsafeKey(base) || parts.some(isUnsafeKey)) continue;
    if (parts.length === 1 && parts[0] === '') {
      const prev = out[base];
      out[base] = Array.isArray(prev) ? [...prev, value] : [value];
    } else if (parts.length === 1) {
      const prev = out[base];
      const obj =
        typeof prev === 'object' && prev !== null && !Array.isArray(prev)
          ? (prev as Record<string, unknown>)
          : (Object.create(null) as Record<string, unknown>);
      obj[parts[0] as string] = value;
      out[base] = obj;
    } else {
      out[rawKey] = value;
    }
  }
  return { ...out };
}

function isUnsafeKey(k: string): boolean {
  return k === '__proto__' || k === 'constructor' || k === 'prototype';
}

/** The request path without its query string: queries may carry private_token, access_token or job_token. */
function pathOnly(url: string | undefined): string {
  const raw = url ?? '/';
  const q = raw.indexOf('?');
  return q === -1 ? raw : raw.slice(0, q);
}
