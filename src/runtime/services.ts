/**
 * The real implementations the runtime uses unless a test injects its own: the plan loader, the
 * SQLite checkpoint, the undici client and the seven actors. Loaded lazily by run.ts so unit tests
 * with fakes never open a socket or a database.
 */
import { realActors } from '../actors/index.js';
import { createInstanceApi } from '../api/instance.js';
import { loadPlan } from '../plan/load.js';
import { openCheckpoint } from '../store/checkpoint.js';
import { systemClock } from '../shared/clock.js';
import { claimDrain } from './ownership/drain-registry.js';
import { isAlive, thisHost } from './ownership/process.js';
import type { RuntimeServices } from './types.js';
import { concurrencyCeiling } from '../plan/concurrency-field.js';

/** Every real dependency of a run. */
export function defaultServices(): RuntimeServices {
  return {
    loadPlan: (file, opts) => loadPlan(file, opts),
    openCheckpoint: (file, opts) => openCheckpoint(file, opts),
    createApi: (plan, opts) =>
      createInstanceApi({
        baseUrl: plan.instance.url,
        credentials: plan.instance.credentials,
        sudo: plan.instance.sudo,
        timeoutMs: plan.instance.timeoutMs,
        readOnly: opts.readOnly,
        concurrency: concurrencyCeiling(plan.move.concurrency),
        onRefresh: opts.onRefresh,
        onResponse: opts.onResponse,
        ...(opts.outage ? { outage: opts.outage } : {}),
        ...(opts.clock ? { now: opts.clock.now.bind(opts.clock), sleep: opts.clock.sleep.bind(opts.clock) } : {}),
      }),
    actors: realActors,
    clock: systemClock,
    isAlive,
    pid: process.pid,
    host: thisHost(),
    claimDrain,
  };
}
