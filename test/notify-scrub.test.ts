/**
 * What a failing hook or webhook answer leaves in an attempt's error, when a secret straddles the
 * place where it was cut: a hook that prints a token across the kept 2 KiB's start (and across
 * the held 8 KiB's start), at every offset; a receiver whose answer holds a token across the read
 * limit; and a receiver that quotes the request line and headers it got. Judged from the delivery's
 * result: no four characters of the secret in a row, for every GitLab token prefix and the
 * 20-character tokens from before prefixes.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '../src/events/run-events.js';
import { createExecSender } from '../src/notify/exec.js';
import { targetsOf } from '../src/notify/targets.js';
import type { Delivery, Sender } from '../src/notify/types.js';
import { createWebhookSender } from '../src/notify/webhook.js';
import type { NotifyTarget } from '../src/plan/notify-field.js';
import { GITLAB_TOKEN_PREFIXES } from '../src/plan/secrets.js';
import { resolvedSecrets } from '../src/secrets/registry.js';
import { startReceiver } from './support/notify-receiver.js';

const BODY = 'Kq4Zr8Xm2Vv6Jd9Nc3Bt';
/** Every prefix GitLab gives its tokens, and two 20-character tokens from before prefixes. */
const TOKENS = [...GITLAB_TOKEN_PREFIXES.map((p) => `${p}${BODY}`), 'x1c2v3b4n5m6q7w8e9r0', 'A1s2D3f4G5h6J7k8L9z0'];
const RUN = {
  plan: 'p',
  planFile: '/p/plan.yaml',
  instance: 'https://gitlab.example.com',
  host: 'h',
  checkpoint: '/p/p.db',
};
const EVENT = {
  v: 1,
  seq: 1,
  at: '2026-11-24T01:12:40.552Z',
  type: 'run.finished',
  outcome: 'done',
  exitCode: 0,
  error: null,
  quarantined: 0,
} as RunEvent;

/** The first run of four characters of `secret` that `text` holds, or null. */
const pieceIn = (text: string, secret: string): string | null => {
  for (let i = 0; i + 4 <= secret.length; i += 1)
    if (text.includes(secret.slice(i, i + 4))) return secret.slice(i, i + 4);
  return null;
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'shardmove-notify-scrub-'));
  resolvedSecrets.add(...TOKENS);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function delivery(plan: NotifyTarget): Delivery {
  return {
    target: targetsOf([plan])[0]!,
    event: EVENT,
    line: 'shardmove p on h: run finished done (exit 0)',
    run: RUN,
    attempt: 1,
    signal: new AbortController().signal,
  };
}

const base = { on: ['run.finished' as const], all: false, timeoutMs: 10_000, path: 'notify[0]' };

async function hookSays(sender: Sender, output: string): Promise<string> {
  const file = join(dir, 'out.txt');
  writeFileSync(file, output);
  const hook = join(dir, 'hook');
  writeFileSync(hook, `#!/bin/sh\ncat > /dev/null\ncat "${file}"\nexit 1\n`);
  chmodSync(hook, 0o755);
  const result = await sender.send(delivery({ kind: 'exec', argv: [hook], ...base }));
  expect(result.ok).toBe(false);
  return result.ok ? '' : result.error;
}

describe('a failing hook whose output a token straddles the cut of', () => {
  it('keeps no piece of the token, whatever the offset of the kept part in it', async () => {
    const sender = createExecSender({ cwd: dir, env: { PATH: process.env['PATH'] } });
    try {
      for (const [i, token] of TOKENS.entries()) {
        // Every offset for two tokens, across the 2 KiB kept and the 8 KiB held; the edges' neighbours for the rest.
        const every = i === 0 || i === TOKENS.length - 1;
        const edges = every ? [2_048, 8_192] : [2_048];
        const offsets = every
          ? Array.from({ length: token.length - 1 }, (_, n) => n + 1)
          : [1, 3, 4, 11, 12, 13, token.length - 1];
        for (const edge of edges)
          for (const inside of offsets) {
            // `inside` characters of the token are within the last `edge` bytes of the output.
            const after = '='.repeat(edge - inside);
            const said = await hookSays(sender, `${'='.repeat(3_000)} token ${token}${after}`);
            expect(
              pieceIn(said, token),
              `${token} with ${inside} inside the last ${edge} bytes: ${said.slice(0, 80)}`,
            ).toBeNull();
          }
      }
    } finally {
      await sender.close();
    }
  }, 120_000);
});

describe('a failing webhook answer a token straddles the read limit of', () => {
  it('keeps no piece of the token, whatever the offset', async () => {
    let body = '';
    const r = await startReceiver((_, res) => {
      res.statusCode = 500;
      res.end(body);
    });
    const sender = createWebhookSender();
    try {
      for (const token of [TOKENS[0]!, TOKENS.at(-1)!])
        for (const edge of [2_048, 8_192])
          for (let inside = 1; inside < token.length; inside += 1) {
            body = `${'='.repeat(edge - inside)}${token}${'='.repeat(100)}`;
            const result = await sender.send(
              delivery({ kind: 'webhook', url: `${r.url}/hook`, format: 'json', token: null, ...base }),
            );
            const said = result.ok ? '' : result.error;
            expect(said).toContain('HTTP 500');
            expect(pieceIn(said, token), `${inside} of ${token} before the ${edge} bytes' end`).toBeNull();
          }
    } finally {
      await sender.close();
    }
  });

  it('keeps nothing of a URL secret or a token that a receiver quotes from the request line and headers', async () => {
    const token = TOKENS.at(-2)!;
    const urlKey = 'Zm9vYmFyYmF6cXV4MTIz';
    resolvedSecrets.add(`/hook?private_token=${urlKey}`, urlKey);
    const r = await startReceiver((req, res) => {
      res.statusCode = 400;
      res.end(
        `${'-'.repeat(2_030)} you sent: POST ${req.url} HTTP/1.1; authorization: ${String(req.headers['authorization'])}`,
      );
    });
    const sender = createWebhookSender();
    try {
      const result = await sender.send(
        delivery({ kind: 'webhook', url: `${r.url}/hook?private_token=${urlKey}`, format: 'json', token, ...base }),
      );
      const said = result.ok ? '' : result.error;
      expect(said).toContain('HTTP 400');
      expect(pieceIn(said, token)).toBeNull();
      expect(pieceIn(said, urlKey)).toBeNull();
    } finally {
      await sender.close();
    }
  });
});
