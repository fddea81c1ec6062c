/**
 * A webhook delivery: one POST of the event (the `--events` object with the `run` it is about as
 * the JSON body, or Slack's `{"text": ...}`, whose line names the plan and host), with the target's token as `Authorization: Bearer` and never anywhere else. One
 * attempt with a time limit on the whole exchange; redirects are not followed (./policy.ts says
 * why); an answer's body is read only as far as an error message needs, so a receiver that answers
 * slowly or endlessly costs at most the time limit and a few KiB. What a receiver says is scrubbed
 * of every secret the process knows, the target's token first, before anything keeps it.
 */
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import { SHARDMOVE_VERSION } from '../api/version.js';
import { escapeControls } from '../report/escape.js';
import { scrubServerText } from '../secrets/registry.js';
import type { CutEdges } from '../secrets/registry.js';
import { httpResult } from './policy.js';
import type { DeliveryResult } from './policy.js';
import { notificationJson, slackText } from './text.js';
import type { Delivery, Sender } from './types.js';

/** What is kept of an answer that is not a success, for its error message (characters, once scrubbed). */
const ERROR_TEXT_CHARS = 2_048;
/** What is read of it: more than is kept, so a secret that straddles the kept part's end is whole when it is scrubbed. */
const ERROR_READ_BYTES = 8_192;
/** What is read (and dropped) of a success's body before the connection is let go. */
const DUMP_BYTES = 64 * 1024;

/** The webhook sender: one connection pool for every webhook of the run. */
export function createWebhookSender(): Sender {
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: 4 });
  return {
    send: (d) => post(agent, d),
    // Attempts still running at the end were aborted: nothing is worth waiting for.
    close: () => agent.destroy().catch(() => undefined),
  };
}

async function post(dispatcher: Dispatcher, d: Delivery): Promise<DeliveryResult> {
  const plan = d.target.plan;
  if (plan.kind !== 'webhook') return { ok: false, permanent: true, error: 'not a webhook' };
  const url = new URL(plan.url);
  const body = plan.format === 'slack' ? JSON.stringify({ text: slackText(d.line) }) : notificationJson(d.event, d.run);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': `shardmove/${SHARDMOVE_VERSION}`,
    'x-shardmove-event': d.event.type,
    'x-shardmove-seq': String(d.event.seq),
  };
  if (plan.token) headers['authorization'] = `Bearer ${plan.token}`;
  // A bound on a real socket (as undici's headersTimeout), not a wait of the run: real time.
  // eslint-disable-next-line no-restricted-properties -- a socket's timeout is real whatever the clock
  const timeout = AbortSignal.timeout(plan.timeoutMs);
  const scrub = (text: string, edges: CutEdges = {}) =>
    escapeControls(scrubServerText(text, [plan.token], edges)).replace(/\s+/g, ' ');
  try {
    const res = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers,
      body,
      headersTimeout: plan.timeoutMs,
      bodyTimeout: plan.timeoutMs,
      signal: AbortSignal.any([timeout, d.signal]),
    });
    if (res.statusCode >= 200 && res.statusCode < 300) {
      await res.body.dump({ limit: DUMP_BYTES }).catch(() => undefined);
      return { ok: true };
    }
    const read = await readSome(res.body, ERROR_READ_BYTES).catch(() => ({ text: '', cut: false }));
    // Scrubbed whole (a piece of a secret at the read's end is masked as a cut edge), then cut.
    const clean = scrub(read.text, { end: read.cut });
    const said = clean.length > ERROR_TEXT_CHARS || read.cut ? `${clean.slice(0, ERROR_TEXT_CHARS)}...` : clean;
    const location = res.headers['location'];
    return httpResult(res.statusCode, typeof location === 'string' ? location : null, said, {
      base: url,
      scrub: (t: string) => scrub(t),
    });
  } catch (err) {
    const why = d.signal.aborted
      ? 'the run ended before it answered'
      : timeout.aborted
        ? `no answer within ${plan.timeoutMs / 1000}s`
        : ((err as { code?: string }).code ?? (err as Error).message ?? 'error');
    return { ok: false, permanent: false, error: scrub(String(why)) };
  }
}

/** The first `limit` bytes of a body as text, and whether there was more; the rest is not read (the stream is destroyed). */
async function readSome(body: Dispatcher.ResponseData['body'], limit: number): Promise<{ text: string; cut: boolean }> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    bytes += chunk.length;
    if (bytes >= limit) {
      body.destroy();
      break;
    }
  }
  return { text: Buffer.concat(chunks).subarray(0, limit).toString('utf8'), cut: bytes >= limit };
}
