/**
 * A stand-in for the operator's Prometheus in front of a sandbox, for the release matrix: it answers
 * `POST /api/v1/query` for one instant vector selector (`name{label="value",...}`) by reading the
 * sandbox's node_exporter page at that moment, so a free-space query sees the destination's room as
 * the sandbox has it now, without a scrape interval in between. Anything else is answered as
 * Prometheus answers a query it cannot parse (400, `bad_data`), which makes a plan that asks for more
 * fail loudly instead of reading nothing. On a free loopback port; the caller closes it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

const SELECTOR = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$/;
const MATCHER = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*$/;

export interface NodeExporterPrometheus {
  url: string;
  /** How many queries it answered with samples read from the sandbox. */
  queries(): number;
  close(): Promise<void>;
}

/** Starts it for the sandbox at `sandboxUrl`. */
export async function startNodeExporterPrometheus(sandboxUrl: string): Promise<NodeExporterPrometheus> {
  let answered = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const query = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('query') ?? '';
      const m = SELECTOR.exec(query.trim());
      const matchers = (m?.[2] ?? '').split(',').filter((s) => s.trim() !== '');
      const wanted = matchers.map((s) => MATCHER.exec(s));
      if (req.url !== '/api/v1/query' || req.method !== 'POST' || !m || wanted.some((w) => w === null)) {
        send(400, { status: 'error', errorType: 'bad_data', error: `unsupported query ${JSON.stringify(query)}` });
        return;
      }
      fetch(`${sandboxUrl}/-/sandbox/node-exporter/metrics`)
        .then((r) => r.text())
        .then((text) => {
          const family = parsePrometheusTextFormat(text).find((f) => f.name === m[1]);
          const result = (family?.metrics ?? [])
            .filter((s) => wanted.every((w) => s.labels?.[w![1]!] === w![2]))
            .map((s) => ({ metric: { __name__: m[1], ...s.labels }, value: [Date.now() / 1000, s.value] }));
          answered++;
          send(200, { status: 'success', data: { resultType: 'vector', result } });
        })
        .catch((err: Error) => send(503, { status: 'error', errorType: 'unavailable', error: err.message }));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    queries: () => answered,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}
