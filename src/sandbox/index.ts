/**
 * The reference service, in-process: `startSandbox(options)` returns `{ url, close() }`.
 * The `sandbox` command, the demo and the tests all start it through here.
 */
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import pino from 'pino';
import type { Logger } from 'pino';
import { systemClock } from '../shared/clock.js';
import type { Clock } from '../shared/clock.js';
import type { SandboxState } from './http/context.js';
import { getMeta, openDatabase } from './db.js';
import type { FaultOptions } from './faults.js';
import { DEFAULT_BULK_DELAY_MS, NO_FAULTS, createFaults } from './faults.js';
import type { MoveEngine } from './moves/engine.js';
import { createMoveEngine } from './moves/engine.js';
import { Router } from './http/router.js';
import type { InstanceConfig, Seed } from './seed-schema.js';
import { createRandom } from './random.js';
import { applySeed, loadSeed } from './seed.js';
import { createRequestListener } from './server.js';
import { register as registerAuthRoutes } from './auth/users.js';
import { register as registerTokenRoutes } from './auth/admin-token.js';
import { register as registerOauthRoutes } from './auth/oauth.js';
import { register as registerMoveRoutes } from './moves/routes.js';
import { register as registerWriteRoutes } from './inventory/writes.js';
import { register as registerInventoryRoutes } from './inventory/routes.js';
import { register as registerSettingsRoutes } from './instance/settings.js';
import { register as registerHealthRoutes } from './instance/health.js';
import { register as registerGeoRoutes } from './instance/geo.js';
import { register as registerMetricsRoutes } from './instance/metrics.js';
import { register as registerPoolRoutes } from './moves/pool-routes.js';
import { register as registerRefRoutes } from './inventory/refs.js';

export interface SandboxOptions {
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** A seed file path or an already parsed seed; default: plans/sandbox.yaml. */
  seed?: string | Seed;
  /** SQLite file for all state; default: in memory. */
  db?: string;
  /** The GitLab release to behave as (`16.5`, `16.5.1`): replaces the seed's `instance.version`. */
  version?: string;
  workers?: number;
  speed?: number;
  moveDurationMs?: number;
  faults?: Partial<FaultOptions>;
  clock?: Clock;
  /** Defaults to a silent logger (the CLI passes one that writes to stderr). */
  logger?: Logger;
}

/** The state as the starter holds it: handlers see the engine's MoveScheduler side, tests stop and wake it. */
export interface RunningState extends SandboxState {
  engine: MoveEngine;
}

export interface RunningSandbox {
  url: string;
  port: number;
  state: RunningState;
  close(): Promise<void>;
}

export { SandboxHttpError } from './http/errors.js';
export type { SandboxState } from './http/context.js';
export { INJECTED_FAILURES, parseMoveFailures } from './faults.js';
export type { InjectedFailure, MoveFailures } from './faults.js';

/** Builds the router with every route of the service. */
export function createRouter(): Router {
  const router = new Router();
  for (const register of [
    registerAuthRoutes,
    registerTokenRoutes,
    registerOauthRoutes,
    registerMoveRoutes,
    registerWriteRoutes,
    registerInventoryRoutes,
    registerSettingsRoutes,
    registerHealthRoutes,
    registerGeoRoutes,
    registerMetricsRoutes,
    registerPoolRoutes,
    registerRefRoutes,
  ])
    register(router);
  return router;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const clock: Clock = options.clock ?? systemClock;
  const log = options.logger ?? pino({ level: 'silent' });
  const faultOptions = { ...NO_FAULTS, ...options.faults };
  // Fault windows, rate limits and injected latency follow the sandbox's clock, so an injected clock drives them too.
  // Built first: invalid fault options (FaultOptionsError) leave the database untouched.
  const faults = createFaults(faultOptions, clock);
  const loaded = typeof options.seed === 'object' ? options.seed : loadSeed(options.seed);
  const seed =
    options.version === undefined ? loaded : { ...loaded, instance: { ...loaded.instance, version: options.version } };
  const db = openDatabase(options.db);
  applySeed(db, seed, clock.now());
  const config = getMeta<InstanceConfig>(db, 'config') as InstanceConfig;
  const base = { db, config, clock, log, faults };
  const engine = createMoveEngine(base, {
    workers: options.workers ?? 10,
    // Destination picks by weight are reproducible under the fault seed.
    random: createRandom(faultOptions.seed ^ 0x5eed),
    speed: options.speed ?? 1,
    bulkDelayMs: faultOptions.bulkDelayMs ?? DEFAULT_BULK_DELAY_MS,
    ...(options.moveDurationMs !== undefined ? { moveDurationMs: options.moveDurationMs } : {}),
  });
  const state: RunningState = { ...base, engine };
  const router = createRouter();
  let origin = '';
  const server = createServer(
    { keepAliveTimeout: 65_000 },
    createRequestListener(state, router, () => origin),
  );
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  // A malformed request line or header gets a plain 400 from Node; keep it from crashing anything.
  server.on('clientError', (_err, socket) => {
    if (socket.writable)
      socket.end(
        'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"error":"400 Bad Request"}',
      );
    else socket.destroy();
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  engine.start();
  log.info({ url: origin }, 'sandbox listening');
  let closed = false;
  return {
    url: origin,
    port,
    state,
    async close() {
      if (closed) return;
      closed = true;
      engine.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        for (const s of sockets) s.destroy();
      });
      db.close();
    },
  };
}
