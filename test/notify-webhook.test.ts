/**
 * A webhook delivery against local receivers on port 0 that misbehave: one that answers 500 and
 * echoes the token, one that never answers, one that answers slowly, one that redirects to another
 * address, one that answers without end; and what a receiver gets: the `--events` line as its body
 * (or Slack's text, with Slack's control characters escaped), the token in a header and nowhere
 * else. Judged from what the receivers got and the delivery's result.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../src/events/run-events.js';
import { RunEventSchema } from '../src/events/run-events.js';
import { targetsOf } from '../src/notify/targets.js';
import type { Delivery, Sender } from '../src/notify/types.js';
import { createWebhookSender } from '../src/notify/webhook.js';
import type { NotifyTarget } from '../src/plan/notify-field.js';

const TOKEN = 'hook-token-Qx81mZpL0aT6';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const servers: Server[] = [];
let senders: Sender[] = [];
afterEach(async () => {
  for (const s of senders) await s.close();
  senders = [];
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((done) => s.close(done));
  }
});

/** A receiver on a free port; `answer` decides what each request gets. */
async function receiver(answer: (req: Seen, res: ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const s = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(s);
      answer(s, res);
    });
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const RUN = {
  plan: 'p',
  planFile: '/srv/plans/p.yaml',
  instance: 'https://gitlab.example.com',
  host: 'ops-1',
  checkpoint: '/srv/plans/state/p.db',
};

const EVENT = {
  v: 1,
  seq: 7,
  at: '2026-11-23T22:00:01.204Z',
  type: 'move.quarantined',
  kind: 'projects',
  source: 'nfs-1',
  id: 17,
  reason: 'checksum <!channel> & <@U123> differ',
  attempts: 3,
  stuck: false,
  class: 'checksum',
} as RunEvent;

function deliver(
  url: string,
  opts: { format?: 'json' | 'slack'; timeoutMs?: number; token?: string | null } = {},
  signal = new AbortController().signal,
) {
  const plan: NotifyTarget = {
    kind: 'webhook',
    url,
    format: opts.format ?? 'json',
    token: opts.token === undefined ? TOKEN : opts.token,
    on: ['move.quarantined'],
    all: false,
    timeoutMs: opts.timeoutMs ?? 5_000,
    path: 'notify[0]',
  };
  const sender = createWebhookSender();
  senders.push(sender);
  const d: Delivery = {
    target: targetsOf([plan])[0]!,
    event: EVENT,
    line: 'shardmove p: projects 17 on nfs-1 QUARANTINED after 3 attempt(s) (checksum): checksum <!channel> & <@U123> differ',
    run: RUN,
    attempt: 1,
    signal,
  };
  return sender.send(d);
}

describe('a webhook delivery', () => {
  it('POSTs the --events object and the run it is about as its body, the token in Authorization only', async () => {
    const r = await receiver((_, res) => res.end('ok'));
    const result = await deliver(`${r.url}/hooks/shardmove?team=storage`);
    expect(result).toEqual({ ok: true });
    expect(r.seen).toHaveLength(1);
    const got = r.seen[0]!;
    expect(got.method).toBe('POST');
    expect(got.url).toBe('/hooks/shardmove?team=storage');
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['authorization']).toBe(`Bearer ${TOKEN}`);
    expect(got.headers['x-shardmove-event']).toBe('move.quarantined');
    expect(got.headers['x-shardmove-seq']).toBe('7');
    expect(RunEventSchema.parse(JSON.parse(got.body))).toEqual(EVENT);
    expect(JSON.parse(got.body)).toEqual({ ...EVENT, run: RUN });
    expect(got.body).not.toContain(TOKEN);
    expect(got.url).not.toContain(TOKEN);
  });

  it("sends Slack's {text}, with <, > and & escaped so a quoted error cannot ping a channel", async () => {
    const r = await receiver((_, res) => res.end('ok'));
    expect(await deliver(r.url, { format: 'slack', token: null })).toEqual({ ok: true });
    const body = JSON.parse(r.seen[0]!.body) as { text: string };
    expect(Object.keys(body)).toEqual(['text']);
    expect(body.text).toBe(
      'shardmove p: projects 17 on nfs-1 QUARANTINED after 3 attempt(s) (checksum): checksum &lt;!channel&gt; &amp; &lt;@U123&gt; differ',
    );
    expect(r.seen[0]!.headers['authorization']).toBeUndefined();
  });

  it('takes a 500 that echoes the token as a failure to try again, the token scrubbed from what it keeps', async () => {
    const r = await receiver((req, res) => {
      res.statusCode = 500;
      res.end(`upstream broke; you sent ${String(req.headers['authorization'])}`);
    });
    const result = await deliver(r.url);
    expect(result).toMatchObject({ ok: false, permanent: false });
    const error = result.ok ? '' : result.error;
    expect(error).toContain('HTTP 500: upstream broke');
    expect(error).not.toContain(TOKEN);
    expect(error).not.toContain(TOKEN.slice(0, 12));
  });

  it('gives up on an answer the receiver would give again (401)', async () => {
    const r = await receiver((_, res) => {
      res.statusCode = 401;
      res.end('bad token');
    });
    expect(await deliver(r.url)).toEqual({ ok: false, permanent: true, error: 'HTTP 401: bad token' });
  });

  it('ends an attempt at a receiver that never answers at its time limit', async () => {
    const r = await receiver(() => undefined);
    const result = await deliver(r.url, { timeoutMs: 300 });
    expect(result).toMatchObject({ ok: false, permanent: false });
    expect(!result.ok && result.error).toContain('no answer within 0.3s');
    expect(r.seen).toHaveLength(1);
  });

  it('waits for a receiver that answers slowly within the time limit', async () => {
    const r = await receiver((_, res) => {
      res.writeHead(200);
      res.write('working');
      setTimeout(() => res.end(' done'), 200).unref();
    });
    expect(await deliver(r.url, { timeoutMs: 5_000 })).toEqual({ ok: true });
  });

  it('does not follow a redirect to another address, and says where it pointed', async () => {
    const other = await receiver((_, res) => res.end('ok'));
    const r = await receiver((_, res) => {
      res.writeHead(307, { location: `${other.url}/collect?key=elsewhere-secret` });
      res.end();
    });
    const result = await deliver(r.url);
    expect(result).toMatchObject({ ok: false, permanent: true });
    const error = result.ok ? '' : result.error;
    expect(error).toContain(`HTTP 307: a redirect to ${other.url}/collect?key=[REDACTED], not followed`);
    expect(error).not.toContain('elsewhere-secret');
    expect(other.seen).toEqual([]);
  });

  it.each([
    ['file:///etc/passwd', 'a redirect to file:///etc/passwd, not an http(s) address, not followed'],
    ['/elsewhere/hook?team=a', 'a redirect to {origin}/elsewhere/hook?team=a, not followed'],
    ['next', 'a redirect to {origin}/hooks/next, not followed'],
    ['//other.example/x', 'a redirect to http://other.example/x, not followed'],
    ['HTTPS://Other.Example./x', 'a redirect to https://other.example./x, not followed'],
    [
      'https://u:hunter2pass@other.example/p?private_token=x1c2v3b4n5m6q7w8e9r0&team=a',
      'a redirect to https://[REDACTED]@other.example/p?private_token=[REDACTED]&team=a, not followed',
    ],
    [
      'https://hooks.slack.com/services/T0AAA/B0BBB/Xy12Zz34Ww56Vv78Uu90Tt12',
      'a redirect to https://hooks.slack.com/services/[REDACTED], not followed',
    ],
    ['http://[::1', 'a redirect to "http://[::1", which is not an address, not followed'],
  ])('reports a redirect to %s where it points, scrubbed, and does not follow it', async (location, words) => {
    const r = await receiver((_, res) => {
      res.writeHead(302, { location });
      res.end();
    });
    const result = await deliver(`${r.url}/hooks/shardmove`);
    expect(result).toMatchObject({ ok: false, permanent: true });
    const error = result.ok ? '' : result.error;
    expect(error).toContain(`HTTP 302: ${words.replace('{origin}', r.url)}`);
    expect(error).not.toContain('hunter2pass');
    expect(error).not.toContain('x1c2v3b4n5m6q7w8e9r0');
    expect(error).not.toContain('Xy12Zz34');
    expect(r.seen).toHaveLength(1);
  });

  it('reads a few KiB of an endless answer and lets it go', async () => {
    let written = 0;
    let closed = false;
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const endless = (status: number) => (_: Seen, res: ServerResponse) => {
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.on('close', () => (closed = true));
      const more = () => {
        while (!closed && written < 2 ** 30) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
      };
      more();
    };
    const ok = await receiver(endless(200));
    expect(await deliver(ok.url, { timeoutMs: 10_000 })).toEqual({ ok: true });
    await expect.poll(() => closed).toBe(true);
    expect(written).toBeLessThan(2 ** 30);
    closed = false;
    written = 0;
    const failing = await receiver(endless(503));
    const result = await deliver(failing.url, { timeoutMs: 10_000 });
    expect(result).toMatchObject({ ok: false, permanent: false });
    expect(!result.ok && result.error.length).toBeLessThan(2_200);
    await expect.poll(() => closed).toBe(true);
  });

  it('takes a refused connection as a failure to try again', async () => {
    const r = await receiver(() => undefined);
    await new Promise((done) => servers.pop()!.close(done));
    expect(await deliver(r.url)).toMatchObject({
      ok: false,
      permanent: false,
      error: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('ends an attempt at once when the run stops waiting', async () => {
    const r = await receiver(() => undefined);
    const abort = new AbortController();
    const pending = deliver(r.url, { timeoutMs: 60_000 }, abort.signal);
    await expect.poll(() => r.seen.length).toBe(1);
    abort.abort();
    expect(await pending).toMatchObject({
      ok: false,
      error: expect.stringContaining('the run ended before it answered'),
    });
  });
});
