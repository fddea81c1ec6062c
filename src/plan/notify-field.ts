/**
 * `notify:` (notifications and hooks): where the run's events go besides `--events`, each entry a
 * list of event names and one target, a webhook or a command:
 *
 *   notify:
 *     - on: [move.quarantined, breaker.tripped, lease.lost, run.finished]
 *       webhook: {url: ${SLACK_WEBHOOK_URL}, format: slack}
 *     - on: ['*']
 *       exec: [hooks/page-oncall, --team, storage]
 *       timeout: 30s
 *
 * The names are the `--events` vocabulary (./event-names.ts); `'*'` is every one of them
 * but `progress`. A webhook's token follows the plan's secret rules (`${VAR}` or a file, never a
 * literal) and goes in a header; a URL that carries a credential (user:password@ is refused
 * outright; a key in its path, as Slack's incoming webhooks have, or in its query, as
 * `?private_token=`) must come from the environment (./url-credentials.ts judges it). A command's argv is taken as
 * written: a `${VAR}` there would put its value where every user of the host can read it (`ps`).
 */
import { isAbsolute, resolve } from 'node:path';
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { readOptionalSecret } from './credentials.js';
import { RUN_EVENT_NAMES } from './event-names.js';
import type { RunEventName } from './event-names.js';
import { formatPlanDuration } from '../time/durations.js';
import { expandVars } from './expand.js';
import type { FieldDoc, JsonSchema } from './field-table.js';
import { duration, readEnum } from './fields.js';
import { DURATION_PATTERN, ONLY_VAR_REFS, isSet, textSchema } from './json-schema.js';
import { closest } from './reader.js';
import type { Entry, Pos, Reader } from './reader.js';
import { credentialIn } from './url-credentials.js';
import { readHttpUrl } from './url-field.js';
import { showValue } from './secrets.js';

export const NOTIFY_KEYS = ['on', 'webhook', 'exec', 'timeout'] as const;
export const WEBHOOK_KEYS = ['url', 'format', 'token', 'token_file'] as const;
export const WEBHOOK_FORMATS = ['json', 'slack'] as const;
/** A delivery's time limit: a webhook's answer, or a command's run. */
export const NOTIFY_TIMEOUT_MS = { default: 10_000, min: 1_000, max: 600_000 } as const;
/** More targets than this is a configuration to split up, not a plan. */
export const NOTIFY_MAX_TARGETS = 20;
const MAX_ARGS = 100;
const MAX_ARG_LENGTH = 4096;

/** An event `on` may name. `progress` comes every interval: a channel or a pager is no place for it. */
export type NotifyEventName = Exclude<RunEventName, 'progress'>;
export const NOTIFY_EVENTS: readonly NotifyEventName[] = RUN_EVENT_NAMES.filter(
  (n): n is NotifyEventName => n !== 'progress',
);

/** A webhook: the event as a JSON body (or Slack's `{text}`), its token as `Authorization: Bearer`. */
export interface WebhookTarget {
  kind: 'webhook';
  url: string;
  format: (typeof WEBHOOK_FORMATS)[number];
  token: string | null;
}

/** A command: argv without a shell, the event on standard input. */
export interface ExecTarget {
  kind: 'exec';
  /** argv[0] is absolute when the plan wrote a path (relative ones resolve against the plan's directory). */
  argv: string[];
}

export type NotifyTarget = (WebhookTarget | ExecTarget) & {
  /** The events it gets, in the vocabulary's order (`'*'` written out). */
  on: NotifyEventName[];
  /** True when the plan wrote `'*'`. */
  all: boolean;
  timeoutMs: number;
  /** Where the plan writes it, `notify[1]`, for messages. */
  path: string;
};

const get = (m: Map<string, Entry>, k: string): Node | null => m.get(k)?.value ?? null;

/** Reads `notify`; undefined when any entry is unusable (each problem reported at its node). */
export function readNotify(r: Reader, node: Node, path: string, invalid: Set<string>): NotifyTarget[] | undefined {
  r.mark(path, r.posOf(node));
  const items = r.seq(node, path, 'targets such as {on: [run.finished], webhook: {url: ...}}');
  if (!items) return undefined;
  if (items.length > NOTIFY_MAX_TARGETS) {
    r.error(path, r.posOf(node), `at most ${NOTIFY_MAX_TARGETS} targets; got ${items.length}`);
    return undefined;
  }
  const out: NotifyTarget[] = [];
  let ok = true;
  items.forEach((item, i) => {
    const target = readTarget(r, item, `${path}[${i}]`, invalid);
    if (!target) {
      ok = false;
      return;
    }
    const twin = out.find((o) => sameTarget(o, target));
    if (twin) {
      r.error(
        target.path,
        r.posOf(item),
        `the same ${target.kind} as ${twin.path}: merge their \`on\` lists (each event would reach it twice)`,
      );
      ok = false;
    } else out.push(target);
  });
  return ok ? out : undefined;
}

function sameTarget(a: NotifyTarget, b: NotifyTarget): boolean {
  if (a.kind === 'webhook' && b.kind === 'webhook') return a.url === b.url;
  if (a.kind === 'exec' && b.kind === 'exec') return JSON.stringify(a.argv) === JSON.stringify(b.argv);
  return false;
}

function readTarget(r: Reader, node: Node, path: string, invalid: Set<string>): NotifyTarget | undefined {
  r.mark(path, r.posOf(node));
  const m = r.map(node, path, NOTIFY_KEYS);
  if (!m) return undefined;
  const onNode = get(m, 'on');
  const on = r.isNull(onNode) ? undefined : readOn(r, onNode!, `${path}.on`);
  if (r.isNull(onNode)) r.error(`${path}.on`, r.posOf(node), 'is required: the events to send, e.g. [run.finished]');
  const timeoutNode = get(m, 'timeout');
  const timeoutMs = duration(r, timeoutNode, `${path}.timeout`, NOTIFY_TIMEOUT_MS.default, invalid);
  let ok = on !== undefined && !invalid.has(`${path}.timeout`);
  if (!invalid.has(`${path}.timeout`) && (timeoutMs < NOTIFY_TIMEOUT_MS.min || timeoutMs > NOTIFY_TIMEOUT_MS.max)) {
    r.error(
      `${path}.timeout`,
      r.posOf(timeoutNode),
      `expected a duration from ${formatPlanDuration(NOTIFY_TIMEOUT_MS.min)} to ${formatPlanDuration(NOTIFY_TIMEOUT_MS.max)}`,
    );
    ok = false;
  }
  const set = (['webhook', 'exec'] as const).filter((k) => !r.isNull(get(m, k)));
  if (set.length !== 1) {
    const at = set.length === 0 ? r.posOf(node) : r.posOf(m.get('exec')!.key);
    r.error(`${path}.${set[1] ?? 'webhook'}`, at, 'set exactly one of webhook or exec');
    return undefined;
  }
  const kind = set[0]!;
  const target =
    kind === 'webhook'
      ? readWebhook(r, get(m, 'webhook')!, `${path}.webhook`)
      : readExec(r, get(m, 'exec')!, `${path}.exec`);
  if (!target || !ok || !on) return undefined;
  return { ...target, ...on, timeoutMs, path };
}

function readOn(r: Reader, node: Node, path: string): { on: NotifyEventName[]; all: boolean } | undefined {
  r.mark(path, r.posOf(node));
  const items = r.seq(node, path, "event names, or '*' for all of them but progress");
  if (!items) return undefined;
  if (items.length === 0) {
    r.error(path, r.posOf(node), "list at least one event, or '*' for all of them but progress");
    return undefined;
  }
  const names = new Set<NotifyEventName>();
  const written: string[] = [];
  let all = false;
  let ok = true;
  items.forEach((item, i) => {
    const p = `${path}[${i}]`;
    const at = r.posOf(item);
    const s = r.string(item, p);
    if (!s) return void (ok = false);
    const name = s.value.trim();
    if (written.includes(name)) {
      r.error(p, at, `${showValue(name)} is listed twice`);
      return void (ok = false);
    }
    written.push(name);
    if (name === '*') {
      all = true;
      for (const n of NOTIFY_EVENTS) names.add(n);
    } else if (name === 'progress') {
      r.error(
        p,
        at,
        "progress comes every --events-interval and is not sent as a notification: use --events or --metrics-file for it ('*' leaves it out)",
      );
      ok = false;
    } else if ((NOTIFY_EVENTS as readonly string[]).includes(name)) names.add(name as NotifyEventName);
    else {
      const near = closest(name, NOTIFY_EVENTS);
      r.error(
        p,
        at,
        `unknown event ${showValue(name)}${near ? ` (did you mean "${near}"?)` : ''}; events: ${NOTIFY_EVENTS.join(', ')}, or '*'`,
      );
      ok = false;
    }
  });
  if (!ok) return undefined;
  return { on: NOTIFY_EVENTS.filter((n) => names.has(n)), all };
}

function readWebhook(r: Reader, node: Node, path: string): WebhookTarget | undefined {
  r.mark(path, r.posOf(node));
  const m = r.map(node, path, WEBHOOK_KEYS);
  if (!m) return undefined;
  const urlNode = get(m, 'url');
  if (r.isNull(urlNode)) {
    r.error(`${path}.url`, r.posOf(node), 'is required: the address the events are POSTed to');
    return undefined;
  }
  const url = readWebhookUrl(r, urlNode!, `${path}.url`);
  let format: WebhookTarget['format'] = 'json';
  const formatNode = get(m, 'format');
  let ok = url !== undefined;
  if (!r.isNull(formatNode)) {
    const f = readEnum(r, formatNode!, `${path}.format`, WEBHOOK_FORMATS);
    if (f === undefined) ok = false;
    else format = f;
  }
  const token = readOptionalSecret(r, m, 'token', `${path}.token`);
  if (token.given && token.value === undefined) ok = false;
  if (!ok || url === undefined) return undefined;
  return { kind: 'webhook', url, format, token: token.given ? token.value! : null };
}

function readWebhookUrl(r: Reader, node: Node, path: string): string | undefined {
  const read = readHttpUrl(r, node, path, {
    example: 'https://alerts.example.com/hooks/shardmove',
    credentials:
      ' (user:password@): put the secret in token or token_file, which is sent as a header, never in the URL',
  });
  if (!read) return undefined;
  const { url: u, fromVars } = read;
  const at = r.posOf(node);
  if (u.hash) return void r.error(path, at, 'must not have a fragment');
  const credential = credentialIn(u);
  if (credential && !fromVars) {
    if (node.range) r.secretRanges.push([node.range[0], node.range[2]]);
    return void r.error(
      path,
      at,
      credential.inPath
        ? `${credential.what}: write url: \${${credential.variable}} and keep it out of the plan file`
        : `${credential.what}: put the secret in token or token_file, which is sent as a header, never in the URL; or, if the receiver takes it only in the URL, write url: \${${credential.variable}} and keep it out of the plan file`,
    );
  }
  // A URL from the environment may carry its key in its path or query: its secret parts are
  // registered, so no message, log, checkpoint or echo repeats them; only its origin is ever
  // shown. Only those parts: the scrub masks any long run of a registered value, and the rest
  // of a URL (its host, its words) appears in ordinary answers.
  if (fromVars && credential) r.secrets.push(...credential.values);
  return u.href;
}

function readExec(r: Reader, node: Node, path: string): ExecTarget | undefined {
  const argv = r.each(
    node,
    path,
    {
      items: 'the command and its arguments, e.g. [hooks/page-oncall, --team, storage]',
      wrongCount: `list the command and its arguments (1 to ${MAX_ARGS} words)`,
      max: MAX_ARGS,
    },
    (item, itemPath) => readWord(r, item, itemPath),
  );
  if (!argv) return undefined;
  if (argv[0]!.trim() === '') {
    r.error(`${path}[0]`, r.at(`${path}[0]`), 'the command is empty');
    return undefined;
  }
  // A path is the plan's neighbour, as token files are; a bare name is looked up on PATH when it runs.
  const command = argv[0]!;
  if (command.includes('/') && !isAbsolute(command)) argv[0] = resolve(r.baseDir, command);
  return { kind: 'exec', argv };
}

/** One argv word: a string taken as written (no ${VAR}), without NUL, of bounded length. */
function readWord(r: Reader, node: Node, path: string): string | undefined {
  const at: Pos = r.posOf(node);
  r.mark(path, at);
  const raw = isScalar(node) ? node.value : undefined;
  if (typeof raw === 'string' && expandVars(raw, {}).refs.length > 0) {
    r.error(
      path,
      at,
      "is taken as written: a ${VAR} here would put its value in the command's arguments, which every user of the host can read (ps). The command inherits shardmove's environment (less the plan's secrets): read it there",
    );
    return undefined;
  }
  const s = r.string(node, path);
  if (!s) return undefined;
  if (s.value.includes('\0')) return void r.error(path, at, 'contains a NUL character');
  if (s.value.length > MAX_ARG_LENGTH) return void r.error(path, at, `longer than ${MAX_ARG_LENGTH} characters`);
  return s.value;
}

export const NOTIFY_SCHEMA: JsonSchema = {
  type: 'array',
  maxItems: NOTIFY_MAX_TARGETS,
  items: {
    type: 'object',
    properties: {
      on: {
        type: 'array',
        minItems: 1,
        uniqueItems: true,
        items: textSchema({ enum: [...NOTIFY_EVENTS, '*'] }),
      },
      webhook: {
        type: 'object',
        properties: {
          url: textSchema({
            pattern: '^\\s*[hH][tT][tT][pP][sS]?://[^\\s/?#@\\\\:][^\\s/?#@\\\\]*(?:[/?][^#]*)?\\s*$',
          }),
          format: textSchema({ enum: [...WEBHOOK_FORMATS] }),
          token: { type: 'string', pattern: ONLY_VAR_REFS },
          token_file: textSchema(),
        },
        required: ['url'],
        not: { allOf: [isSet('token'), isSet('token_file')] },
        additionalProperties: false,
      },
      exec: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_ARGS,
        items: { type: 'string', maxLength: MAX_ARG_LENGTH, not: { pattern: '(?:^|[^$])\\$\\{' } },
      },
      timeout: textSchema({ pattern: DURATION_PATTERN }),
    },
    required: ['on'],
    oneOf: [isSet('webhook'), isSet('exec')],
    additionalProperties: false,
  },
};

export const NOTIFY_DOC: FieldDoc = {
  type: 'list of mappings',
  default: 'none',
  allowed: `at most ${NOTIFY_MAX_TARGETS}, each target once`,
  more: 'Real runs only: a dry run sends none. See [notifications and hooks](operations.md#notifications-and-hooks).',
  keys: {
    on: {
      type: 'list of event names',
      default: 'required',
      allowed: "the [`--events` types](events.md#event-types) but `progress`, or `'*'` for all of them",
      meaning: 'The events this target gets.',
    },
    webhook: {
      type: 'mapping',
      default: 'one of webhook, exec',
      allowed: '`url` (required), `format`: `json` (default) or `slack`, `token` (`${VAR}`) or `token_file`',
      meaning:
        'POSTs each event: the `--events` object with the `run` it is about (plan, plan file, instance, host, checkpoint) as its JSON body, or Slack\'s `{"text": ...}` naming the plan and host. The token goes in `Authorization: Bearer`; `user:password@` in the URL is refused, and a URL that carries a key in its path or query (Slack, Discord, Teams, a Telegram bot, `?private_token=`, `?sig=` ...) must come from `${VAR}`. Redirects are not followed.',
    },
    exec: {
      type: 'list of strings',
      default: 'one of webhook, exec',
      allowed: 'no `${VAR}`; a path relative to the plan, or a name on `PATH`',
      meaning:
        "Runs the command without a shell, the event as JSON on standard input (the webhook's body) and in `SHARDMOVE_*` variables; exit 0 means delivered.",
    },
    timeout: {
      type: 'duration',
      default: `\`${formatPlanDuration(NOTIFY_TIMEOUT_MS.default)}\``,
      allowed: `\`${formatPlanDuration(NOTIFY_TIMEOUT_MS.min)}\` to \`${formatPlanDuration(NOTIFY_TIMEOUT_MS.max)}\``,
      meaning:
        "How long one delivery may take: the webhook's answer, or the command (then killed with its process group).",
    },
  },
};
