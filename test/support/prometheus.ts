/**
 * A real Prometheus and a real node_exporter on loopback, for the tests that prove what an operator
 * sees: node_exporter runs only its textfile collector on a directory the test gives, and
 * Prometheus scrapes it (and any other target) every second with a configuration generated in a temp
 * directory, its TSDB there too, nothing remote. Ports are chosen by binding port 0 first, and a start
 * that still loses the race (EADDRINUSE) is retried on another port. Every wait is bounded; stop()
 * kills both, waits for them to exit and removes the temp directory, and a process-exit hook kills
 * whatever a crashed test left behind.
 *
 * The binaries: $PROMETHEUS_PATH and $NODE_EXPORTER_PATH, else `prometheus` and
 * `prometheus-node-exporter` (Debian) or `node_exporter` (upstream) on PATH. `.ci/run` installs
 * Debian's; elsewhere a machine without them skips the tests with a message, and under CI=true a
 * missing binary is a failure.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Agent, request } from 'undici';

type Env = Readonly<Record<string, string | undefined>>;

export interface PrometheusBinaries {
  prometheus: string;
  nodeExporter: string;
}

/** First executable `name` on PATH, or null. */
function onPath(names: readonly string[], env: Env): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of names) {
      const file = join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {
        // not here
      }
    }
  }
  return null;
}

function binary(override: string | undefined, names: readonly string[], env: Env): string | null {
  if (override) return existsSync(override) ? override : null;
  return onPath(names, env);
}

/** Both binaries, or null when either is missing. */
export function findPrometheusBinaries(env: Env = process.env): PrometheusBinaries | null {
  const prometheus = binary(env.PROMETHEUS_PATH, ['prometheus'], env);
  const nodeExporter = binary(env.NODE_EXPORTER_PATH, ['prometheus-node-exporter', 'node_exporter'], env);
  return prometheus && nodeExporter ? { prometheus, nodeExporter } : null;
}

/** Why the Prometheus tests cannot run here, or null when they can (CI without the binaries throws). */
export function prometheusSkipReason(env: Env = process.env): string | null {
  if (findPrometheusBinaries(env)) return null;
  const why =
    'prometheus or node_exporter not found (looked for $PROMETHEUS_PATH or prometheus, and $NODE_EXPORTER_PATH or ' +
    'prometheus-node-exporter / node_exporter, on PATH; apt-get install prometheus prometheus-node-exporter)';
  if (env.CI === 'true') throw new Error(`CI=true: the Prometheus tests must run, but ${why}`);
  return why;
}

export interface ScrapeTarget {
  job: string;
  /** Base URLs of the targets, e.g. `http://127.0.0.1:4321`; all of one scheme. */
  urls: string[];
  /** Default `/metrics`. */
  metricsPath?: string;
}

export interface PrometheusStackOptions {
  /** node_exporter's textfile directory (created when missing; the test owns it and removes it). */
  textfileDir: string;
  /** Scraped besides node_exporter (job `node`). */
  scrapeTargets?: ScrapeTarget[];
  /** Scrape (and rule evaluation) interval; default 1000 ms. */
  scrapeIntervalMs?: number;
  /** Bound on starting both and seeing node_exporter `up`; default 30 s. */
  startTimeoutMs?: number;
}

/** One series of an instant vector, value as a number (NaN included), timestamp in Unix seconds. */
export interface Sample {
  labels: Record<string, string>;
  value: number;
  timestamp: number;
}

export type QueryData =
  | { resultType: 'vector'; result: { metric: Record<string, string>; value: [number, string] }[] }
  | { resultType: 'matrix'; result: { metric: Record<string, string>; values: [number, string][] }[] }
  | { resultType: 'scalar' | 'string'; result: [number, string] };

/** Prometheus answered a query with an error (a parse error is `bad_data`). */
export class PrometheusQueryError extends Error {
  override readonly name = 'PrometheusQueryError';
  constructor(
    readonly query: string,
    readonly errorType: string,
    readonly reason: string,
  ) {
    super(`${errorType}: ${reason} (query: ${query})`);
  }
}

export interface PrometheusStack {
  prometheusUrl: string;
  nodeExporterUrl: string;
  scrapeIntervalMs: number;
  /** GET /api/v1/query at the current time; throws PrometheusQueryError when Prometheus says error. */
  query(promql: string): Promise<QueryData>;
  /** query() for an instant vector (a scalar is one unlabelled sample). */
  samples(promql: string): Promise<Sample[]>;
  /** Repeats samples() until `done` says so; throws with the last answer when `timeoutMs` passes. */
  waitFor(promql: string, done: (samples: Sample[]) => boolean, timeoutMs: number): Promise<Sample[]>;
  /** Stops Prometheus alone (node_exporter stays), as an outage mid-run; its data stays. */
  stopPrometheus(): Promise<void>;
  /** Starts Prometheus again on the same address, with the same configuration and data; resolves once ready. */
  startPrometheus(): Promise<void>;
  /** Kills both (TERM, then KILL after a grace), waits for them to exit, removes the temp directory. */
  stop(): Promise<void>;
}

const HTTP_TIMEOUT_MS = 5_000;
const STOP_GRACE_MS = 8_000;
const PORT_ATTEMPTS = 5;

/** Children still running, killed when the test process exits (a crashed test must not leak them). */
const live = new Set<ChildProcess>();
let exitHook = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const c of live) c.kill('SIGKILL');
  });
}

/** A port that was free a moment ago (the caller retries if someone takes it in between). */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => done(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Proc {
  name: string;
  child: ChildProcess;
  log: string;
  exited: Promise<number | null>;
}

/** Spawns `bin`, its output appended to `log` (a file: an undrained pipe would block it). */
function spawnLogged(name: string, bin: string, args: string[], log: string): Proc {
  const fd = openSync(log, 'a');
  try {
    const child = spawn(bin, args, { stdio: ['ignore', fd, fd] });
    track(child);
    const exited = new Promise<number | null>((done) => {
      child.once('exit', (code) => done(code));
      child.once('error', () => done(null));
    });
    return { name, child, log, exited };
  } finally {
    closeSync(fd);
  }
}

function logTail(proc: Proc, lines = 15): string {
  try {
    return readFileSync(proc.log, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function stopProc(proc: Proc): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  const timedOut = Symbol('timeout');
  let timer: NodeJS.Timeout | undefined;
  const graceful = await Promise.race([
    proc.exited,
    new Promise<typeof timedOut>((r) => (timer = setTimeout(() => r(timedOut), STOP_GRACE_MS))),
  ]);
  clearTimeout(timer);
  if (graceful !== timedOut) return;
  proc.child.kill('SIGKILL');
  await proc.exited;
}

async function get(agent: Agent, url: string): Promise<{ status: number; text: string }> {
  const res = await request(url, { dispatcher: agent, headersTimeout: HTTP_TIMEOUT_MS, bodyTimeout: HTTP_TIMEOUT_MS });
  return { status: res.statusCode, text: await res.body.text() };
}

/** Whether this process's own log says it bound `listen` (both log it at info level once listening). */
function saysListening(proc: Proc, listen: string): boolean {
  try {
    return new RegExp(`msg="Listening on" address=${listen.replaceAll('.', '\\.')}(\\s|$)`, 'm').test(
      readFileSync(proc.log, 'utf8'),
    );
  } catch {
    return false;
  }
}

/**
 * Starts `bin` on a free loopback port and waits until its log says it listens there and
 * `readyPath` answers 200 (the log first: a process that lost the port to another server must not
 * be taken for the server that answers). A start that exits with EADDRINUSE (the port was taken
 * after we looked) is retried on another port.
 */
async function startOnFreePort(
  agent: Agent,
  name: string,
  bin: string,
  args: (listen: string) => string[],
  readyPath: string,
  log: string,
  deadline: number,
): Promise<{ proc: Proc; url: string }> {
  for (let attempt = 1; ; attempt += 1) {
    const listen = `127.0.0.1:${await freePort()}`;
    const url = `http://${listen}`;
    const proc = spawnLogged(name, bin, args(listen), log);
    let exitCode: number | null | undefined;
    void proc.exited.then((c) => (exitCode = c));
    for (;;) {
      if (exitCode !== undefined) break;
      const ok =
        saysListening(proc, listen) &&
        (await get(agent, `${url}${readyPath}`).then(
          (r) => r.status === 200,
          () => false,
        ));
      if (ok) return { proc, url };
      if (Date.now() > deadline) {
        await stopProc(proc);
        throw new Error(`${name} did not become ready on ${listen}:\n${logTail(proc)}`);
      }
      await sleep(50);
    }
    const tail = logTail(proc);
    if (/address already in use/i.test(tail) && attempt < PORT_ATTEMPTS && Date.now() < deadline) continue;
    throw new Error(`${name} exited with ${exitCode} on ${listen}:\n${tail}`);
  }
}

/** The generated prometheus.yml (JSON is YAML). */
function prometheusConfig(nodeExporter: string, targets: readonly ScrapeTarget[], intervalMs: number): string {
  const interval = `${intervalMs}ms`;
  const jobs = [{ job: 'node', urls: [nodeExporter], metricsPath: '/metrics' }, ...targets].map((t) => {
    const parsed = t.urls.map((u) => new URL(u));
    const schemes = new Set(parsed.map((u) => u.protocol));
    if (schemes.size !== 1) throw new Error(`scrape job ${t.job}: one scheme per job, got ${[...schemes].join(', ')}`);
    return {
      job_name: t.job,
      scheme: parsed[0]!.protocol.replace(':', ''),
      metrics_path: t.metricsPath ?? '/metrics',
      static_configs: [{ targets: parsed.map((u) => u.host) }],
    };
  });
  // scrape_timeout must not exceed the interval (Prometheus's default of 10 s would be refused).
  return JSON.stringify(
    {
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
      scrape_configs: jobs,
    },
    null,
    2,
  );
}

function toSamples(promql: string, data: QueryData): Sample[] {
  if (data.resultType === 'scalar') return [{ labels: {}, value: Number(data.result[1]), timestamp: data.result[0] }];
  if (data.resultType !== 'vector')
    throw new Error(`expected an instant vector from ${promql}, got ${data.resultType}`);
  return data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]), timestamp: r.value[0] }));
}

/** Starts node_exporter (textfile collector only) and Prometheus scraping it; see the module comment. */
export async function startPrometheusStack(opts: PrometheusStackOptions): Promise<PrometheusStack> {
  const bins = findPrometheusBinaries();
  if (!bins) throw new Error(prometheusSkipReason() ?? 'prometheus binaries not found');
  const scrapeIntervalMs = opts.scrapeIntervalMs ?? 1000;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 30_000);
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-prometheus-'));
  mkdirSync(opts.textfileDir, { recursive: true });
  const agent = new Agent({ connections: 4 });
  const procs: Proc[] = [];
  let stopped: Promise<void> | null = null;

  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      // Prometheus first: it would otherwise log failed scrapes of a node_exporter that is gone.
      for (const p of [...procs].reverse()) await stopProc(p);
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    })());

  try {
    const node = await startOnFreePort(
      agent,
      'node_exporter',
      bins.nodeExporter,
      (listen) => [
        `--web.listen-address=${listen}`,
        '--collector.disable-defaults',
        '--collector.textfile',
        `--collector.textfile.directory=${opts.textfileDir}`,
        '--web.disable-exporter-metrics',
      ],
      '/metrics',
      join(dir, 'node-exporter.log'),
      deadline,
    );
    procs.push(node.proc);

    const config = join(dir, 'prometheus.yml');
    writeFileSync(config, prometheusConfig(node.url, opts.scrapeTargets ?? [], scrapeIntervalMs));
    const prom = await startOnFreePort(
      agent,
      'prometheus',
      bins.prometheus,
      (listen) => [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=${listen}`,
      ],
      '/-/ready',
      join(dir, 'prometheus.log'),
      deadline,
    );
    procs.push(prom.proc);
    const promArgs = (listen: string) => [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=${listen}`,
    ];
    let promProc = prom.proc;
    const stopPrometheus = async () => {
      await stopProc(promProc);
    };
    const startPrometheus = async () => {
      if (promProc.child.exitCode === null && promProc.child.signalCode === null) return;
      // The same address: a client configured with the URL must find it again. Go listens with
      // SO_REUSEADDR, so the port is free as soon as the old process has exited.
      const listen = new URL(prom.url).host;
      const end = Date.now() + (opts.startTimeoutMs ?? 30_000);
      const next = spawnLogged('prometheus', bins.prometheus, promArgs(listen), join(dir, 'prometheus.log'));
      procs[procs.indexOf(promProc)] = next;
      promProc = next;
      for (;;) {
        if (next.child.exitCode !== null) throw new Error(`prometheus exited on restart:\n${logTail(next)}`);
        if (
          await get(agent, `${prom.url}/-/ready`).then(
            (r) => r.status === 200,
            () => false,
          )
        )
          return;
        if (Date.now() > end) throw new Error(`prometheus did not become ready again on ${listen}:\n${logTail(next)}`);
        await sleep(50);
      }
    };

    const query = async (promql: string): Promise<QueryData> => {
      const res = await get(agent, `${prom.url}/api/v1/query?${new URLSearchParams({ query: promql })}`);
      let body: { status: string; data?: QueryData; errorType?: string; error?: string };
      try {
        body = JSON.parse(res.text) as typeof body;
      } catch {
        throw new Error(`prometheus answered ${res.status} with no JSON: ${res.text.slice(0, 200)}`);
      }
      if (body.status !== 'success' || !body.data)
        throw new PrometheusQueryError(promql, body.errorType ?? String(res.status), body.error ?? res.text);
      return body.data;
    };
    const samples = async (promql: string) => toSamples(promql, await query(promql));
    const waitFor = async (promql: string, done: (s: Sample[]) => boolean, timeoutMs: number): Promise<Sample[]> => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const s = await samples(promql);
        if (done(s)) return s;
        if (Date.now() > end)
          throw new Error(`waited ${timeoutMs} ms for ${promql}; last answer: ${JSON.stringify(s)}`);
        await sleep(Math.min(200, scrapeIntervalMs / 4));
      }
    };

    // Ready means scraping: node_exporter has been scraped successfully at least once. That takes about
    // five seconds whatever the interval: Prometheus's discovery hands new targets to the scrape
    // manager at most every 5 s, the first time included.
    await waitFor('up{job="node"}', (s) => s.length === 1 && s[0]!.value === 1, Math.max(1000, deadline - Date.now()));

    return {
      prometheusUrl: prom.url,
      nodeExporterUrl: node.url,
      scrapeIntervalMs,
      query,
      samples,
      waitFor,
      stopPrometheus,
      startPrometheus,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
