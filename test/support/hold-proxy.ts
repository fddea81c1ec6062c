/**
 * A pass-through HTTP proxy between the CLI and the sandbox that can stop the world at one exact
 * request: the kill test arms it with a predicate, and the first matching request is held (after
 * optionally forwarding it, so the sandbox acts on it while the CLI never hears back). That pins a
 * `kill -9` to a named moment (pre-flight, a POST whose answer never arrived, ...) instead of a timer.
 */
import { rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';
import type { SandboxProcess } from './cli-harness.js';
import { startSandboxProcess, tempDir, writeSeed } from './cli-harness.js';

export interface SeenRequest {
  method: string;
  /** Path and query, e.g. "/api/v4/projects?repository_storage=nfs-1". */
  url: string;
  body: string;
}

export interface Trap {
  /** Which request to stop at. */
  match: (r: SeenRequest) => boolean;
  /** Forward it to the sandbox first (the effect happens, only the answer is lost). */
  forward: boolean;
}

/** A request the proxy held, with what it needs to answer it late (`letGo`). */
interface Held {
  res: ServerResponse;
  req: IncomingMessage;
  body: Buffer;
  forwarded: boolean;
}

export interface HoldProxy {
  url: string;
  /** Arms a trap; resolves with the matched request once it is held (answer withheld). */
  arm(trap: Trap): Promise<SeenRequest>;
  /** Drops held connections and disarms (the CLI that sent them is dead). */
  release(): void;
  /**
   * Sends the held requests that were not forwarded on to the sandbox now and passes its answers
   * back, as if the instance had been slow (one that was forwarded is dropped: its answer is lost).
   */
  letGo(): Promise<void>;
  /** Every request the proxy received, in order (held ones included). */
  readonly seen: readonly SeenRequest[];
  close(): Promise<void>;
}

/** Starts a proxy on a free port in front of `upstream` (the sandbox's base URL). */
export async function startHoldProxy(upstream: string): Promise<HoldProxy> {
  const target = new URL(upstream);
  let trap: (Trap & { hit: (r: SeenRequest) => void }) | null = null;
  const held: Held[] = [];
  const seenAll: SeenRequest[] = [];

  const forward = (
    req: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> =>
    new Promise((resolve, reject) => {
      // The original Host header goes along, so the sandbox's Link headers point back at the proxy.
      const up = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
        },
      );
      up.on('error', reject);
      up.end(body);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const seen: SeenRequest = { method: req.method ?? 'GET', url: req.url ?? '/', body: body.toString('utf8') };
    seenAll.push(seen);
    const t = trap;
    if (t && t.match(seen)) {
      trap = null;
      if (t.forward) await forward(req, body).catch(() => undefined);
      held.push({ res, req, body, forwarded: t.forward });
      t.hit(seen);
      return;
    }
    await answer(req, body, res);
  };

  const answer = async (req: IncomingMessage, body: Buffer, res: ServerResponse) => {
    try {
      const out = await forward(req, body);
      const headers = { ...out.headers };
      delete headers['transfer-encoding'];
      delete headers['connection'];
      res.writeHead(out.status, { ...headers, 'content-length': String(out.body.length) });
      res.end(out.body);
    } catch {
      res.socket?.destroy();
    }
  };

  const server: Server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const release = () => {
    trap = null;
    for (const h of held.splice(0)) h.res.socket?.destroy();
  };
  const letGo = async () => {
    for (const h of held.splice(0)) {
      if (h.forwarded) h.res.socket?.destroy();
      else await answer(h.req, h.body, h.res);
    }
  };
  return {
    url: `http://127.0.0.1:${port}`,
    arm: (t) => new Promise((hit) => (trap = { ...t, hit })),
    release,
    letGo,
    seen: seenAll,
    close: () =>
      new Promise<void>((resolve) => {
        release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A sandbox process (`shardmove sandbox ...args`, seeded with the harness's seed of `counts`) behind
 * a hold proxy, in a temporary directory; all three are gone when the test ends.
 */
export async function startProxiedSandbox(
  prefix: string,
  args: string[],
  counts: Parameters<typeof writeSeed>[1],
): Promise<{ dir: string; sandbox: SandboxProcess; proxy: HoldProxy }> {
  const dir = tempDir(prefix);
  const sandbox = await startSandboxProcess([...args, '--seed', writeSeed(dir, counts)]);
  const proxy = await startHoldProxy(sandbox.url);
  onTestFinished(async () => {
    await proxy.close();
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, sandbox, proxy };
}
