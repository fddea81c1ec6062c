/**
 * The plan's `notify:` section as a careless or malicious operator writes it: every problem at
 * file:line:col and none repeating a secret; a token, a webhook URL that is itself a key, or a
 * `${VAR}` in a command's arguments never taken literally; the event names those of `--events`;
 * and where notifications go left out of the plan's hash. Also `shardmove validate` on such a plan.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RUN_EVENT_TYPES } from '../src/events/run-events.js';
import { RUN_EVENT_NAMES } from '../src/plan/event-names.js';
import { PlanError } from '../src/plan/errors.js';
import { parsePlanText } from '../src/plan/load.js';
import { resolvedSecrets } from '../src/secrets/registry.js';
import { parse as parseYaml } from 'yaml';
import { runCli } from './support/cli-harness.js';
import { compilePlanSchema } from './support/plan-schema.js';

const ENV = {
  GITLAB_URL: 'https://gitlab.example.com',
  GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB',
  HOOK_TOKEN: 'hook-Tq93LmZx0pKa7WvN',
  SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T0AAA/B0BBB/Xy12Zz34Ww56Vv78Uu90Tt12',
};

const MINIMAL = `version: 1
name: retire-nfs
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1, nfs-2]
  to: cluster
`;

const parse = (notify: string, readFile: (p: string) => { text: string; mode: number } | undefined = () => undefined) =>
  parsePlanText(`${MINIMAL}notify:\n${notify}`, 'plan.yaml', { env: ENV, baseDir: '/srv/plans', readFile });

function problems(notify: string): string[] {
  try {
    parse(notify);
  } catch (err) {
    expect(err).toBeInstanceOf(PlanError);
    return (err as PlanError).problems.map((p) => `${p.line}:${p.col} ${p.path}: ${p.message}`);
  }
  throw new Error('expected a PlanError');
}

describe('the notify section', () => {
  it('reads webhooks and commands: events in the vocabulary order, relative commands beside the plan', () => {
    const { plan } = parse(
      [
        '  - on: [run.finished, move.quarantined]',
        '    webhook: {url: "${SLACK_WEBHOOK_URL}", format: slack}',
        '  - on: ["*"]',
        '    webhook: {url: "https://alerts.example.com/hooks/shardmove?team=storage", token: "${HOOK_TOKEN}"}',
        '    timeout: 30s',
        `  - on: [breaker.tripped, lease.lost]`,
        `    exec: ["hooks/page on-call 'now'", --team, storage]`,
        '  - on: [run.paused]',
        '    exec: [logger, -t, shardmove]',
        '',
      ].join('\n'),
    );
    expect(plan.notify).toEqual([
      {
        kind: 'webhook',
        url: ENV.SLACK_WEBHOOK_URL,
        format: 'slack',
        token: null,
        on: ['move.quarantined', 'run.finished'],
        all: false,
        timeoutMs: 10_000,
        path: 'notify[0]',
      },
      {
        kind: 'webhook',
        url: 'https://alerts.example.com/hooks/shardmove?team=storage',
        format: 'json',
        token: ENV.HOOK_TOKEN,
        on: RUN_EVENT_NAMES.filter((n) => n !== 'progress'),
        all: true,
        timeoutMs: 30_000,
        path: 'notify[1]',
      },
      {
        kind: 'exec',
        argv: ["/srv/plans/hooks/page on-call 'now'", '--team', 'storage'],
        on: ['breaker.tripped', 'lease.lost'],
        all: false,
        timeoutMs: 10_000,
        path: 'notify[2]',
      },
      {
        kind: 'exec',
        argv: ['logger', '-t', 'shardmove'],
        on: ['run.paused'],
        all: false,
        timeoutMs: 10_000,
        path: 'notify[3]',
      },
    ]);
    // The token, and the key of a webhook URL from the environment, whole or in part, are redacted everywhere.
    expect(resolvedSecrets.scrub(`Bearer ${ENV.HOOK_TOKEN} ${ENV.SLACK_WEBHOOK_URL}`)).toBe(
      'Bearer [REDACTED] https://hooks.slack.com[REDACTED]',
    );
    expect(resolvedSecrets.scrub(`POST ${new URL(ENV.SLACK_WEBHOOK_URL).pathname.slice(0, -5)}... HTTP/1.1`)).toBe(
      'POST [REDACTED]... HTTP/1.1',
    );
    // What is not secret in such a URL (its host, the words of its path) stays readable elsewhere.
    expect(resolvedSecrets.scrub('https://hooks.slack.com/services/ and gitlab.example.com')).toBe(
      'https://hooks.slack.com/services/ and gitlab.example.com',
    );
  });

  it('names the same events as --events, in the same order', () => {
    expect([...RUN_EVENT_NAMES]).toEqual([...RUN_EVENT_TYPES]);
  });

  it('refuses unknown events, progress, and a name twice, each where it is written', () => {
    expect(problems('  - on: [run.finish, progress, run.paused, run.paused]\n    exec: [logger]\n')).toEqual([
      expect.stringMatching(
        /^10:10 notify\[0\]\.on\[0\]: unknown event "run\.finish" \(did you mean "run\.finished"\?\); events: run\.started, /,
      ),
      "10:22 notify[0].on[1]: progress comes every --events-interval and is not sent as a notification: use --events or --metrics-file for it ('*' leaves it out)",
      '10:44 notify[0].on[3]: "run.paused" is listed twice',
    ]);
    expect(problems('  - on: []\n    exec: [logger]\n')).toEqual([
      "10:9 notify[0].on: list at least one event, or '*' for all of them but progress",
    ]);
    expect(problems('  - exec: [logger]\n')).toEqual([
      '10:5 notify[0].on: is required: the events to send, e.g. [run.finished]',
    ]);
  });

  it('refuses credentials in a webhook URL, a literal token, and a Slack URL written into the plan', () => {
    const got = problems(
      [
        '  - on: [run.finished]',
        '    webhook: {url: "https://ops:hunter2-pass@alerts.example.com/hook"}',
        '  - on: [run.finished]',
        '    webhook: {url: "https://alerts.example.com/hook?api_key=abc123def", token: "s3cr3t-literal-value"}',
        '  - on: [run.finished]',
        '    webhook: {url: "https://hooks.slack.com/services/T0AAA/B0BBB/Xy12Zz34Ww56Vv78Uu90Tt12"}',
        '  - on: [run.finished]',
        '    webhook: {url: "ftp://alerts.example.com/hook"}',
        '  - on: [run.finished]',
        '    webhook: {url: "https://alerts.example.com/hook", token: "${HOOK_TOKEN}", token_file: t.txt}',
        '',
      ].join('\n'),
    );
    expect(got).toEqual([
      '11:20 notify[0].webhook.url: must not contain credentials (user:password@): put the secret in token or token_file, which is sent as a header, never in the URL',
      '13:20 notify[1].webhook.url: query parameter "api_key" carries a credential: put the secret in token or token_file, which is sent as a header, never in the URL; or, if the receiver takes it only in the URL, write url: ${WEBHOOK_URL} and keep it out of the plan file',
      '13:80 notify[1].webhook.token: a literal secret is not allowed: secrets come from the environment or a file: write ${VAR} or use token_file',
      '15:20 notify[2].webhook.url: a Slack webhook URL is itself a secret (its path is the key): write url: ${SLACK_WEBHOOK_URL} and keep it out of the plan file',
      '17:20 notify[3].webhook.url: must be an http:// or https:// URL',
      '19:79 notify[4].webhook.token_file: set either token or token_file, not both',
    ]);
    for (const secret of ['hunter2-pass', 's3cr3t-literal-value', 'Xy12Zz34Ww56Vv78Uu90Tt12'])
      for (const p of got) expect(p).not.toContain(secret);
  });

  it.each([
    [
      'a legacy token in ?private_token=',
      'https://gitlab.example.com/api/v4/projects/1?private_token=x1c2v3b4n5m6q7w8e9r0',
      'query parameter "private_token" carries a credential',
    ],
    [
      'a signature in the query',
      'https://bus.example.com/hook?X-Amz-Signature=d0e1f2a3&team=a',
      'query parameter "X-Amz-Signature" carries a credential',
    ],
    [
      'a Slack host with a trailing dot',
      'https://hooks.slack.com./services/T0AAA/B0BBB/Xy12Zz34Ww56Vv78Uu90Tt12',
      'a Slack webhook URL is itself a secret',
    ],
    [
      'a Slack host in capitals',
      'https://HOOKS.Slack.COM/services/T0AAA/B0BBB/Xy12Zz34Ww56Vv78Uu90Tt12',
      'a Slack webhook URL is itself a secret',
    ],
    [
      'a Slack host in full-width letters',
      'https://ｈｏｏｋｓ.slack.com/services/T0AAA/B0BBB/Xy12Zz34Ww56Vv78Uu90Tt12',
      'a Slack webhook URL is itself a secret',
    ],
    [
      'a Slack path behind a proxy',
      'https://proxy.example.com/services/T0AAA/B0BBB/Xy12Zz34Ww56Vv78Uu90Tt12',
      'a Slack webhook URL is itself a secret',
    ],
    [
      'a Teams webhook on outlook.office.com',
      'https://outlook.office.com/webhook/a1b2c3d4-0000-4000-8000-000000000001@e5f6/IncomingWebhook/0a1b2c3d4e5f/9f8e7d6c',
      'a Microsoft Teams webhook URL is itself a secret',
    ],
    [
      'a Discord webhook',
      'https://discord.com/api/webhooks/123456789012345678/AbCdEf-gh_IjKlMnOp',
      'a Discord webhook URL is itself a secret',
    ],
    [
      'a Telegram bot',
      'https://api.telegram.org/bot123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-bs/sendMessage',
      'a Telegram bot webhook URL is itself a secret',
    ],
    [
      'a legacy token as a path segment',
      'https://alerts.example.com/hooks/x1c2v3b4n5m6q7w8e9r0',
      'its path holds a key',
    ],
    ['a GitLab token as a path segment', 'https://alerts.example.com/hooks/gldt-Zq8w2e4r6t1y3u5i7o9p', ''],
  ])('refuses a URL that carries a credential written into the plan: %s', (_, url, words) => {
    const got = problems(`  - on: [run.finished]\n    webhook: {url: "${url}"}\n`);
    expect(got).toHaveLength(1);
    expect(got[0]).toContain('notify[0].webhook.url: ');
    expect(got[0]).toContain(words);
    const secretPart = /[A-Za-z0-9_:-]{16,}/.exec(new URL(url).pathname + new URL(url).search)?.[0] ?? '';
    for (let i = 0; i + 6 <= secretPart.length; i += 1) expect(got[0]).not.toContain(secretPart.slice(i, i + 6));
  });

  it('takes such a URL from the environment, and scrubs it, whole or in part, from every text', () => {
    const key = 'x9c8v7b6n5m4q3w2e1r0';
    const url = `https://gitlab.example.com/hooks?private_token=${key}`;
    const telegram = 'https://api.telegram.org/bot123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-bs/sendMessage';
    const { plan } = parsePlanText(
      `${MINIMAL}notify:\n  - on: [run.finished]\n    webhook: {url: "\${HOOK_URL}"}\n  - on: [run.finished]\n    webhook: {url: "\${TG_URL}"}\n`,
      'plan.yaml',
      { env: { ...ENV, HOOK_URL: url, TG_URL: telegram }, baseDir: '/srv/plans', readFile: () => undefined },
    );
    expect(plan.notify?.map((t) => t.kind === 'webhook' && t.url)).toEqual([url, telegram]);
    // A receiver that quotes the request line, or a proxy that cuts it short.
    for (const echo of [
      `POST /hooks?private_token=${key} HTTP/1.1`,
      `token ${key.slice(4)}`,
      `got ${key.slice(0, 14)}...`,
      `POST /bot123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-bs/sendMessage`,
    ]) {
      const out = resolvedSecrets.scrub(echo);
      expect(out).toContain('[REDACTED]');
      for (const secret of [key, '123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-bs'])
        for (let i = 0; i + 6 <= secret.length; i += 1) expect(out).not.toContain(secret.slice(i, i + 6));
    }
  });

  it("refuses ${VAR} in a command's arguments, an empty command, and a target with both or neither of webhook and exec", () => {
    expect(
      problems(
        [
          '  - on: [run.finished]',
          '    exec: [hooks/page, "--key=${PAGER_KEY}"]',
          '  - on: [run.finished]',
          '    exec: ["", x]',
          '  - on: [run.finished]',
          '    exec: [logger]',
          '    webhook: {url: "https://a.example/h"}',
          '  - on: [run.finished]',
          '  - on: [run.finished]',
          '    exec: [logger]',
          '    timeout: 0s',
          '',
        ].join('\n'),
      ),
    ).toEqual([
      "11:24 notify[0].exec[1]: is taken as written: a ${VAR} here would put its value in the command's arguments, which every user of the host can read (ps). The command inherits shardmove's environment (less the plan's secrets): read it there",
      '13:12 notify[1].exec[0]: the command is empty',
      '15:5 notify[2].exec: set exactly one of webhook or exec',
      '17:5 notify[3].webhook: set exactly one of webhook or exec',
      '20:14 notify[4].timeout: expected a duration from 1s to 10m',
    ]);
  });

  it('refuses the same target twice', () => {
    expect(
      problems('  - on: [run.started]\n    exec: [logger, x]\n  - on: [run.finished]\n    exec: [logger, x]\n'),
    ).toEqual(['12:5 notify[1]: the same exec as notify[0]: merge their `on` lists (each event would reach it twice)']);
  });

  it('reads a token from a file beside the plan, warning when others can read it', () => {
    const { plan, warnings } = parse(
      '  - on: [run.finished]\n    webhook: {url: "https://a.example/h", token_file: hook-token}\n',
      (p) => (p === '/srv/plans/hook-token' ? { text: 'file-token-Hs82kQ0zXa\n', mode: 0o644 } : undefined),
    );
    expect(plan.notify?.[0]).toMatchObject({ token: 'file-token-Hs82kQ0zXa' });
    expect(warnings.map((w) => `${w.path}: ${w.message}`)).toEqual([
      'notify[0].webhook.token_file: /srv/plans/hook-token is readable by group or others; chmod 600 it',
    ]);
  });

  it('leaves where notifications go out of the plan hash: a pager added mid-migration is no plan change', () => {
    const without = parsePlanText(MINIMAL, 'plan.yaml', { env: ENV, baseDir: '/srv/plans', readFile: () => undefined });
    const withNotify = parse('  - on: [run.finished]\n    exec: [logger]\n');
    expect(withNotify.hash).toBe(without.hash);
  });
});

describe('the JSON Schema of notify', () => {
  const validate = compilePlanSchema();
  const planWith = (notify: string) => parseYaml(`${MINIMAL}notify:\n${notify}`) as unknown;

  it('accepts the example of docs/operations.md, which the loader reads too', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'operations.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Notifications and hooks'));
    const example = /```yaml\nnotify:\n([\s\S]*?)```/.exec(section)![1]!;
    expect(validate(planWith(example)), JSON.stringify(validate.errors)).toBe(true);
    const loaded = parse(example, (p) =>
      p.endsWith('ops-bus-token') ? { text: 'bus-Zt83kLm0Qa1x', mode: 0o600 } : undefined,
    );
    expect(loaded.plan.notify?.map((t) => t.kind)).toEqual(['webhook', 'exec', 'webhook']);
  });

  it.each([
    ['an unknown event', '  - on: [run.finish]\n    exec: [logger]\n'],
    ['progress', '  - on: [progress]\n    exec: [logger]\n'],
    ['both targets', '  - on: [run.finished]\n    exec: [logger]\n    webhook: {url: "https://a.example/h"}\n'],
    [
      'a literal token',
      '  - on: [run.finished]\n    webhook: {url: "https://a.example/h", token: "abc-literal-token"}\n',
    ],
    ['credentials in the URL', '  - on: [run.finished]\n    webhook: {url: "https://u:p@a.example/h"}\n'],
    ['${VAR} in argv', '  - on: [run.finished]\n    exec: [logger, "${X}"]\n'],
  ])('refuses %s, as the loader does', (_, notify) => {
    expect(validate(planWith(notify))).toBe(false);
  });
});

describe('shardmove validate on a plan with notify', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-notify-plan-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 2 with file:line:col and never repeats the credential', async () => {
    const file = join(dir, 'plan.yaml');
    writeFileSync(
      file,
      `${MINIMAL}notify:\n  - on: [run.finished]\n    webhook: {url: "https://ops:hunter2-pass@alerts.example.com/hook"}\n`,
    );
    const r = await runCli(['validate', file], {
      cwd: dir,
      env: { GITLAB_URL: ENV.GITLAB_URL, GITLAB_TOKEN: ENV.GITLAB_TOKEN },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}:11:20: notify[0].webhook.url: must not contain credentials`);
    expect(`${r.stdout}${r.stderr}`).not.toContain('hunter2-pass');
  });
});
