/**
 * The operator's Prometheus, read through its HTTP API (`POST /api/v1/query`, form-encoded, so long
 * PromQL never meets a URL length limit). One attempt per call, with a timeout on every phase and
 * every body consumed; errors are classified so the caller can tell a query Prometheus rejects
 * (the plan is wrong: refused in pre-flight) from a Prometheus it cannot reach (paused or ignored,
 * as `prometheus.on_error` says).
 */
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import { ShardmoveError } from '../shared/errors.js';
import { scrubServerText } from '../secrets/registry.js';
import type { PrometheusErrorCode } from './errors.js';

/** A Prometheus error: `message` says what failed, quoting Prometheus's own words when it gave any. */
export class PrometheusError extends ShardmoveError<PrometheusErrorCode> {}

/** One sample of a query's answer: its value and its labels (empty for a scalar). */
export interface PromSample {
  value: number;
  labels: Record<string, string>;
}

export interface PrometheusClient {
  /** The samples of an instant query (a scalar is one sample without labels; an empty vector, none). */
  query(promql: string): Promise<PromSample[]>;
  close(): Promise<void>;
}

export interface PrometheusOptions {
  url: string;
  token: string | null;
  timeoutMs: number;
  /**
   * The run's abort signal (Ctrl-C, a lost lease): a query in flight is abandoned at once and
   * rejects with the signal's reason, instead of holding the run up to `timeoutMs`.
   */
  signal?: AbortSignal;
  /** Tests: a dispatcher to use instead of a new Agent (not closed by close()). */
  dispatcher?: Dispatcher;
}

/**
 * The largest answer read. A rule or a room query answers a handful of samples (a few KiB); a query
 * that matches every series of a fleet, or a proxy's error page, could answer gigabytes, and the
 * whole body is held in memory to parse it. Past this the read stops and the query fails.
 */
export const MAX_ANSWER_BYTES = 8 * 2 ** 20;

export function createPrometheusClient(opts: PrometheusOptions): PrometheusClient {
  const base = new URL(opts.url);
  const own = opts.dispatcher
    ? null
    : new Agent({
        connectTimeout: opts.timeoutMs,
        headersTimeout: opts.timeoutMs,
        bodyTimeout: opts.timeoutMs,
        keepAliveTimeout: 10_000,
      });
  const dispatcher: Dispatcher = opts.dispatcher ?? own!;
  const path = `${base.pathname.replace(/\/+$/, '')}/api/v1/query`;
  return {
    async query(promql) {
      opts.signal?.throwIfAborted();
      const headers: Record<string, string> = {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      };
      if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
      // A bound on a real socket (as undici's headersTimeout), not a wait of the run: real time.
      // eslint-disable-next-line no-restricted-properties -- a socket's timeout is real whatever the clock
      const timeout = AbortSignal.timeout(opts.timeoutMs);
      let status: number;
      let text: string;
      try {
        const res = await dispatcher.request({
          origin: base.origin,
          path,
          method: 'POST',
          headers,
          body: new URLSearchParams({ query: promql }).toString(),
          headersTimeout: opts.timeoutMs,
          bodyTimeout: opts.timeoutMs,
          signal: opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout,
        });
        status = res.statusCode;
        text = await readCapped(res.body, base.origin);
      } catch (cause) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (cause instanceof PrometheusError) throw cause;
        const what = (cause as { code?: string; name?: string }).code ?? (cause as Error).name ?? 'error';
        throw new PrometheusError(
          'SHARDMOVE_PROMETHEUS_UNREACHABLE',
          `Prometheus at ${base.origin} did not answer (${what})`,
          { cause },
        );
      }
      // Scrubbed before anything parses or quotes it: Prometheus, or a proxy in front of it, may
      // echo the Authorization header it was sent in an error.
      return parseAnswer(status, scrubServerText(text, [opts.token]), base.origin);
    },
    async close() {
      await own?.close();
    },
  };
}

/**
 * The whole body as text, or a PrometheusError once it passes MAX_ANSWER_BYTES (the rest is not
 * read: the stream is destroyed, and with it the connection).
 */
async function readCapped(body: Dispatcher.ResponseData['body'], origin: string): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > MAX_ANSWER_BYTES) {
      body.destroy();
      throw new PrometheusError(
        'SHARDMOVE_PROMETHEUS_INVALID_RESPONSE',
        `Prometheus at ${origin} answered more than ${MAX_ANSWER_BYTES / 2 ** 20} MiB; the read was stopped (a rule or room query should answer a few samples: aggregate it, e.g. max(...))`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads the API's JSON envelope; pure, for tests. */
export function parseAnswer(status: number, text: string, origin: string): PromSample[] {
  type Envelope = {
    status?: string;
    errorType?: string;
    error?: string;
    data?: { resultType?: string; result?: unknown };
  };
  let body: Envelope | null;
  try {
    body = JSON.parse(text) as Envelope;
  } catch {
    body = null;
  }
  if (body?.status === 'error') {
    // bad_data (400) and execution (422) are answers about the query itself; the rest is the server.
    const code =
      body.errorType === 'bad_data' || body.errorType === 'execution'
        ? 'SHARDMOVE_PROMETHEUS_REJECTED'
        : 'SHARDMOVE_PROMETHEUS_UNREACHABLE';
    throw new PrometheusError(
      code,
      `Prometheus refused the query (${status} ${body.errorType ?? 'error'}): ${body.error ?? 'no message'}`,
    );
  }
  if (status < 200 || status >= 300 || !body || body.status !== 'success' || !body.data) {
    const code =
      status >= 200 && status < 300 ? 'SHARDMOVE_PROMETHEUS_INVALID_RESPONSE' : 'SHARDMOVE_PROMETHEUS_UNREACHABLE';
    throw new PrometheusError(
      code,
      `Prometheus at ${origin} answered ${status} without a query result${status === 401 || status === 403 ? ' (check prometheus.token)' : ''}`,
    );
  }
  const { resultType, result } = body.data;
  const num = (v: unknown): number => (Array.isArray(v) ? parseSampleValue(v[1]) : Number.NaN);
  if (resultType === 'scalar') return [{ value: num(result), labels: {} }];
  if (resultType === 'vector' && Array.isArray(result)) {
    return result.map((s: { metric?: Record<string, string>; value?: unknown }) => ({
      value: num(s.value),
      labels: s.metric ?? {},
    }));
  }
  throw new PrometheusError(
    'SHARDMOVE_PROMETHEUS_REJECTED',
    `the query returns a ${resultType ?? 'result'}; a rule needs a scalar or an instant vector`,
  );
}

/**
 * A sample's value as Prometheus writes it in JSON: a string, with `+Inf`, `-Inf` and `NaN` for the
 * special values (JavaScript's Number() reads `+Inf` as NaN). Anything else that is not a number is
 * NaN: no value.
 */
export function parseSampleValue(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return Number.NaN;
  const t = v.trim();
  if (/^[+]?inf$/i.test(t)) return Number.POSITIVE_INFINITY;
  if (/^-inf$/i.test(t)) return Number.NEGATIVE_INFINITY;
  return t === '' ? Number.NaN : Number(t);
}
