/**
 * The web console's HTTP side: the page and its two static files, the JSON API, and control. Every
 * route needs the token (./auth.ts); control also a same-origin `Origin` and a page token, and it
 * does not exist under `--read-only`. Every answer carries a strict Content-Security-Policy (the page
 * loads nothing from elsewhere and runs no inline script), is never cached, and may not be framed.
 *
 * What a run shows comes from the `RunReader` the command gives (the same reads as `status --json`,
 * `status` and `report`), so the console and the commands cannot disagree. Each refresh reads the
 * checkpoint's aggregates read-only; nothing here holds a lock a run needs.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { CONSOLE_CSS, CONSOLE_JS, consolePage } from './assets.js';
import { PAGE_HEADER, PageTokens, authOf, cookieName, sameOrigin, tokenCookie, sameSecret } from './auth.js';
import type { ServedRun } from './runs.js';

/** The reads a console makes of one run; each may throw (no checkpoint yet, a busy or broken file). */
export interface RunReader {
  /** `status --json`'s document. */
  status(run: ServedRun): unknown;
  /** `status`'s text. */
  text(run: ServedRun): string;
  /** The run's summary line for the list of runs: its state in the progress line's words. */
  headline(run: ServedRun): { name: string; state: string; headline: string };
  /** `report`'s self-contained HTML. */
  reportHtml(run: ServedRun): string;
  /** `report --json`'s document. */
  reportJson(run: ServedRun): unknown;
  /** The newest changes of the cap in force, newest first, each with its reason. */
  caps(run: ServedRun): unknown[];
  /** The Geo resync and the weights before and now, in the final report's words (none before a snapshot). */
  weights(run: ServedRun): string[];
  /** Applies a control from the console; returns what is in force after it, in words. */
  control(run: ServedRun, action: ConsoleControl): string;
}

export type ConsoleControl =
  { action: 'pause' } | { action: 'unpause' } | { action: 'stop' } | { action: 'concurrency'; value: number | null };

export interface ConsoleOptions {
  runs: readonly ServedRun[];
  reader: RunReader;
  token: string;
  readOnly: boolean;
}

/** The policy every answer carries: nothing from elsewhere, no inline script or style, no framing. */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/** The HTML report runs its own inline script: in a sandbox of its own origin, which the token's cookie never reaches. */
const REPORT_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; sandbox allow-scripts";

const BODY_LIMIT = 4096;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}) {
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': String(Buffer.byteLength(body)),
    'Content-Security-Policy': CSP,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
    ...extra,
  });
  res.end(body);
}

const json = (res: ServerResponse, status: number, value: unknown, extra: Record<string, string> = {}) =>
  send(res, status, 'application/json; charset=utf-8', `${JSON.stringify(value)}\n`, extra);

/** Reads a small JSON body, or throws a 4xx that says why. */
async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type))
    throw new HttpError(415, 'a control is a JSON body (Content-Type: application/json)');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) throw new HttpError(413, `a control body is at most ${BODY_LIMIT} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'the body is not valid JSON');
  }
}

/** The control a body asks for, checked field by field. */
export function controlOf(body: unknown): ConsoleControl {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new HttpError(400, 'the body must be an object like {"action":"pause"}');
  const { action, value } = body as { action?: unknown; value?: unknown };
  if (action === 'pause' || action === 'unpause' || action === 'stop') return { action };
  if (action === 'concurrency') {
    // "auto" hands a pinned cap back to the plan's, as `control --concurrency auto` does: its limiter's under auto.
    if (value === null || value === 'plan' || value === 'auto') return { action, value: null };
    if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 1000) return { action, value };
    throw new HttpError(400, 'concurrency: "value" must be a whole number from 1 to 1000, "plan" or "auto"');
  }
  throw new HttpError(400, `"action" must be pause, unpause, stop or concurrency, not ${JSON.stringify(action)}`);
}

/** The console's request handler (exported for tests that drive it without a socket). */
export function consoleHandler(o: ConsoleOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const pages = new PageTokens();
  const byId = new Map(o.runs.map((r) => [r.id, r]));
  const runOf = (id: string): ServedRun => {
    const run = byId.get(id);
    if (!run) throw new HttpError(404, `no run ${JSON.stringify(id)} is served here`);
    return run;
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const method = req.method ?? 'GET';
    // The URL the console printed: the token becomes this origin's cookie, and leaves the address bar.
    const given = url.searchParams.get('token');
    if (url.pathname === '/' && given !== null && method === 'GET') {
      if (!sameSecret(given, o.token))
        throw new HttpError(403, "this token is not the console's: open the URL it printed");
      return send(res, 303, 'text/plain; charset=utf-8', 'see /\n', {
        Location: '/',
        'Set-Cookie': tokenCookie(o.token),
      });
    }
    const auth = authOf(req, o.token);
    if (!auth) {
      const why =
        req.headers.authorization !== undefined || req.headers.cookie?.includes(`${cookieName(o.token)}=`)
          ? "the token is not the console's"
          : 'no token: open the URL the console printed when it started (or send Authorization: Bearer)';
      throw new HttpError(req.headers.authorization !== undefined ? 403 : 401, why);
    }
    if (method === 'GET' || method === 'HEAD') return get(url.pathname, res);
    if (method === 'POST') {
      const m = /^\/api\/runs\/([0-9a-f]{12})\/control$/.exec(url.pathname);
      if (!m) throw new HttpError(404, `no route POST ${url.pathname}`);
      if (o.readOnly) throw new HttpError(404, 'this console is read-only (--read-only): it has no control');
      if (!sameOrigin(req)) throw new HttpError(403, "a control must come from the console's own page (Origin)");
      const page = req.headers[PAGE_HEADER];
      if (!pages.holds(typeof page === 'string' ? page : undefined))
        throw new HttpError(403, 'a control must come from a page this console served: reload it');
      const run = runOf(m[1] as string);
      const control = controlOf(await jsonBody(req));
      return json(res, 200, { ok: true, says: o.reader.control(run, control) });
    }
    throw new HttpError(405, `${method} is not served here`);
  };

  const get = (path: string, res: ServerResponse): void => {
    if (path === '/') return send(res, 200, 'text/html; charset=utf-8', consolePage(pages.issue(), o.readOnly));
    if (path === '/assets/console.js') return send(res, 200, 'text/javascript; charset=utf-8', CONSOLE_JS);
    if (path === '/assets/console.css') return send(res, 200, 'text/css; charset=utf-8', CONSOLE_CSS);
    if (path === '/favicon.ico') return send(res, 204, 'image/x-icon', '');
    if (path === '/api/runs') return json(res, 200, { readOnly: o.readOnly, runs: o.runs.map((r) => listed(o, r)) });
    const m = /^\/api\/runs\/([0-9a-f]{12})(\/text|\/caps|\/weights|\/report|\/report\.html)?$/.exec(path);
    if (!m) throw new HttpError(404, `no route GET ${path}`);
    const run = runOf(m[1] as string);
    if (m[2] === '/text') return json(res, 200, { text: o.reader.text(run) });
    if (m[2] === '/caps') return json(res, 200, { caps: o.reader.caps(run) });
    if (m[2] === '/weights') return json(res, 200, { lines: o.reader.weights(run) });
    if (m[2] === '/report') return json(res, 200, o.reader.reportJson(run));
    if (m[2] === '/report.html')
      return send(res, 200, 'text/html; charset=utf-8', o.reader.reportHtml(run), {
        'Content-Security-Policy': REPORT_CSP,
      });
    return json(res, 200, o.reader.status(run));
  };

  return (req, res) => {
    route(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : 500;
      const message = err instanceof Error ? err.message : String(err);
      if (res.headersSent) return res.destroy();
      // A checkpoint not there yet is no server error: the run has not started.
      const code = (err as { code?: unknown }).code;
      json(res, status === 500 && code === 'SHARDMOVE_NO_CHECKPOINT' ? 404 : status, {
        error: message,
        ...(typeof code === 'string' ? { code } : {}),
      });
    });
  };
}

/** A run as the list shows it; a run that cannot be read says why instead of failing the list. */
function listed(o: ConsoleOptions, run: ServedRun) {
  try {
    return { id: run.id, file: run.file, plan: run.planFile, ...o.reader.headline(run) };
  } catch (err) {
    const none = (err as { code?: unknown }).code === 'SHARDMOVE_NO_CHECKPOINT';
    return {
      id: run.id,
      file: run.file,
      plan: run.planFile,
      name: run.plan?.name ?? run.file,
      state: none ? 'no checkpoint' : 'unreadable',
      headline: none ? 'NO CHECKPOINT YET: the plan has not run' : `UNREADABLE: ${(err as Error).message}`,
    };
  }
}

/** Starts the console on `host:port` (0: a free port); resolves with the server once it listens. */
export function startConsole(o: ConsoleOptions, host: string, port: number): Promise<Server> {
  const server = createServer(consoleHandler(o));
  // A slow client cannot hold the console: requests are small, and so are the answers.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
