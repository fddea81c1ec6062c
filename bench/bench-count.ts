/**
 * Preload (`node --import tsx --import ./bench/bench-count.ts bin/shardmove sandbox ...`) that counts
 * the requests the sandbox receives, by class, through Node's `http.server.request.start`
 * diagnostics channel: the sandbox's own code is untouched and the count costs a counter per
 * request. SIGUSR2 writes the counters since the previous SIGUSR2 as one JSON line to stderr
 * (`{"bench":"requests",...}`) and starts new ones, so a harness can measure one phase at a time.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';

/** Request classes the benchmark reports. */
export type RequestClass = 'postItem' | 'postBulk' | 'moveList' | 'moveGet' | 'listing' | 'itemGet' | 'other';

export interface RequestCounts {
  total: number;
  byClass: Record<RequestClass, number>;
  /** Epoch ms of the first and last request of the window, or null when there was none. */
  firstAt: number | null;
  lastAt: number | null;
  /** Epoch ms of the first mutating request (POST/PUT/DELETE) of the window. */
  firstMutatingAt: number | null;
}

const KINDS = '(projects|snippets|groups)';
const RULES: [RegExp, string | null, RequestClass][] = [
  [new RegExp(`^/api/v4/${KINDS}/\\d+/repository_storage_moves$`), 'POST', 'postItem'],
  [/^\/api\/v4\/(project|snippet|group)_repository_storage_moves$/, 'POST', 'postBulk'],
  [/^\/api\/v4\/(project|snippet|group)_repository_storage_moves$/, 'GET', 'moveList'],
  [/^\/api\/v4\/(project|snippet|group)_repository_storage_moves\/\d+$/, 'GET', 'moveGet'],
  [new RegExp(`^/api/v4/${KINDS}/\\d+/repository_storage_moves(/\\d+)?$`), 'GET', 'moveGet'],
  [new RegExp(`^/api/v4/${KINDS}$`), 'GET', 'listing'],
  [new RegExp(`^/api/v4/${KINDS}/\\d+$`), 'GET', 'itemGet'],
];

function classify(method: string, url: string): RequestClass {
  const path = url.split('?')[0] ?? url;
  for (const [re, m, cls] of RULES) if ((m === null || m === method) && re.test(path)) return cls;
  return 'other';
}

function fresh(): RequestCounts {
  return {
    total: 0,
    byClass: { postItem: 0, postBulk: 0, moveList: 0, moveGet: 0, listing: 0, itemGet: 0, other: 0 },
    firstAt: null,
    lastAt: null,
    firstMutatingAt: null,
  };
}

let counts = fresh();

subscribe('http.server.request.start', (message) => {
  const req = (message as { request: IncomingMessage }).request;
  const method = req.method ?? 'GET';
  const now = Date.now();
  counts.total++;
  counts.byClass[classify(method, req.url ?? '/')]++;
  counts.firstAt ??= now;
  counts.lastAt = now;
  if (method !== 'GET' && method !== 'HEAD') counts.firstMutatingAt ??= now;
});

process.on('SIGUSR2', () => {
  const out = counts;
  counts = fresh();
  process.stderr.write(`${JSON.stringify({ bench: 'requests', ...out })}\n`);
});
