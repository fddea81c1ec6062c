/**
 * A TCP pass-through in front of the sandbox that can make the instance vanish: `down()` stops
 * listening and cuts every open connection (the CLI's keep-alive sockets are reset, new ones are
 * refused: ECONNREFUSED, as when Puma restarts or a load balancer fails over), `up()` listens on
 * the same port again. The sandbox behind it keeps its state and keeps moving, as GitLab's Sidekiq
 * does while its API does not answer. Closed when the test ends.
 */
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { onTestFinished } from 'vitest';

export interface OutageProxy {
  /** http://127.0.0.1:<port>, the same across `down()` and `up()`. */
  url: string;
  down(): Promise<void>;
  up(): Promise<void>;
  /** Connections accepted so far. */
  readonly connections: number;
}

export async function startOutageProxy(upstream: string): Promise<OutageProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  let accepted = 0;
  const serve = (): Server =>
    createServer((client) => {
      accepted++;
      const server = createConnection({ host: target.hostname, port: Number(target.port) });
      sockets.add(client);
      sockets.add(server);
      const cut = () => {
        client.destroy();
        server.destroy();
        sockets.delete(client);
        sockets.delete(server);
      };
      client.on('error', cut).on('close', cut);
      server.on('error', cut).on('close', cut);
      client.pipe(server);
      server.pipe(client);
    });
  const listen = (s: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve((s.address() as AddressInfo).port));
    });
  let server: Server | null = serve();
  const port = await listen(server, 0);
  const stop = async () => {
    const s = server;
    server = null;
    if (!s) return;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await closed;
  };
  onTestFinished(stop);
  return {
    url: `http://127.0.0.1:${port}`,
    down: stop,
    async up() {
      if (server) return;
      server = serve();
      await listen(server, port);
    },
    get connections() {
      return accepted;
    },
  };
}
