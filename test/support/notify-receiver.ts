/**
 * A local webhook receiver on port 0 for the notify tests: it keeps every request it got, and the
 * test decides how it answers (and may change its mind while a run goes on). Closed when the test ends.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface Receiver {
  url: string;
  seen: SeenRequest[];
  /** How the next requests are answered. */
  answer: (req: SeenRequest, res: ServerResponse) => void;
}

export async function startReceiver(answer: Receiver['answer'] = (_, res) => res.end('ok')): Promise<Receiver> {
  const receiver: Receiver = { url: '', seen: [], answer };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      receiver.seen.push(seen);
      receiver.answer(seen, res);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  onTestFinished(async () => {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  });
  return receiver;
}
