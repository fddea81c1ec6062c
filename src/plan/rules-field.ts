/**
 * `throttle.rules`: PromQL queries read from the operator's Prometheus every
 * `throttle.health_every`; a rule whose value is past its bound (for `for`, when given) pauses the
 * run (`action: pause`) or cuts the throttle's cap (`action: cut`). And the `prometheus:` section's
 * own readers: its URL and its optional token.
 *
 *   throttle:
 *     rules:
 *       - {name: gitaly-cpu, query: 'max(rate(process_cpu_seconds_total{job="gitaly"}[5m]))', above: 0.8, action: cut}
 *       - {name: disk-busy, query: 'max(rate(node_disk_io_time_seconds_total[1m]))', above: 0.9, action: pause, for: 2m}
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { readOptionalSecret } from './credentials.js';
import type { FieldDoc, JsonSchema } from './field-table.js';
import { duration, readEnum } from './fields.js';
import { DURATION_PATTERN, ONLY_VAR_REFS, VAR_STRING, isSet, textSchema } from './json-schema.js';
import type { Entry, Pos, Reader } from './reader.js';
import { readHttpUrl } from './url-field.js';
import type { ThrottleRule } from './values.js';

export const RULE_KEYS = ['name', 'query', 'above', 'below', 'action', 'for'] as const;
export const RULE_ACTIONS = ['pause', 'cut'] as const;
const RULE_NAME_RE = /^[a-z0-9][a-z0-9_.-]*$/;
/** A rule may wait up to a day before it acts; longer is a window, not a throttle. */
export const RULE_FOR_MAX_MS = 86_400_000;

const get = (m: Map<string, Entry>, k: string): Node | null => m.get(k)?.value ?? null;

/** Reads `throttle.rules`; undefined when any rule is unusable (each problem reported at its node). */
export function readRules(r: Reader, node: Node, path: string, invalid: Set<string>): ThrottleRule[] | undefined {
  r.mark(path, r.posOf(node));
  const items = r.seq(node, path, 'rules such as {name: disk-busy, query: ..., above: 0.9, action: pause}');
  if (!items) return undefined;
  const out: ThrottleRule[] = [];
  let ok = true;
  items.forEach((item, i) => {
    const rule = readRule(r, item, `${path}[${i}]`, invalid);
    if (!rule) ok = false;
    else if (out.some((o) => o.name === rule.name)) {
      r.error(
        `${path}[${i}].name`,
        r.posOf(item),
        `rule "${rule.name}" is listed twice: names identify rules in events and status`,
      );
      ok = false;
    } else out.push(rule);
  });
  return ok ? out : undefined;
}

function readRule(r: Reader, node: Node, path: string, invalid: Set<string>): ThrottleRule | undefined {
  r.mark(path, r.posOf(node));
  const m = r.map(node, path, RULE_KEYS);
  if (!m) return undefined;
  let ok = true;
  const fail = (key: string, at: Pos, message: string) => {
    r.error(`${path}.${key}`, at, message);
    ok = false;
  };
  for (const k of ['name', 'query', 'action'] as const) {
    if (r.isNull(get(m, k)))
      fail(k, r.posOf(node), `is required: write {name: disk-busy, query: 'max(...)', above: 0.9, action: pause}`);
  }
  let name = '';
  const nameNode = get(m, 'name');
  if (!r.isNull(nameNode)) {
    const s = r.string(nameNode, `${path}.name`);
    if (!s) ok = false;
    else if (!RULE_NAME_RE.test(s.value) || s.value.length > 100)
      fail('name', r.posOf(nameNode), 'expected [a-z0-9][a-z0-9_.-]* (at most 100 characters)');
    else name = s.value;
  }
  let query = '';
  const queryNode = get(m, 'query');
  if (!r.isNull(queryNode)) {
    const s = r.string(queryNode, `${path}.query`);
    if (!s) ok = false;
    else if (s.value.trim() === '')
      fail('query', r.posOf(queryNode), 'is empty: write a PromQL expression returning one value or a vector');
    else query = s.value.trim();
  }
  const bound = (key: 'above' | 'below'): number | null => {
    const n = get(m, key);
    if (r.isNull(n)) return null;
    r.mark(`${path}.${key}`, r.posOf(n));
    let v: unknown = isScalar(n) ? n!.value : undefined;
    if (typeof v === 'string') {
      const s = r.string(n, `${path}.${key}`);
      v = s?.fromVars && /^\s*-?[\d.e+-]+\s*$/i.test(s.value) ? Number(s.value) : v;
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      fail(key, r.posOf(n), 'expected a number');
      return null;
    }
    return v;
  };
  const above = bound('above');
  const below = bound('below');
  if (get(m, 'above') === null && get(m, 'below') === null)
    fail('above', r.posOf(node), 'set one of above or below: the bound past which the rule holds');
  else if (!r.isNull(get(m, 'above')) && !r.isNull(get(m, 'below')))
    fail('below', r.posOf(m.get('below')!.key), 'set either above or below, not both');
  let action: ThrottleRule['action'] = 'pause';
  const actionNode = get(m, 'action');
  if (!r.isNull(actionNode)) {
    const a = readEnum(r, actionNode!, `${path}.action`, RULE_ACTIONS);
    if (a === undefined) ok = false;
    else action = a;
  }
  const forNode = get(m, 'for');
  const forMs = duration(r, forNode, `${path}.for`, 0, invalid);
  if (invalid.has(`${path}.for`)) ok = false;
  else if (forMs > RULE_FOR_MAX_MS) fail('for', r.posOf(forNode), 'expected a duration from 0s to 1d');
  return ok ? { name, query, above, below, action, forMs } : undefined;
}

export const RULES_SCHEMA: JsonSchema = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      name: textSchema({ pattern: RULE_NAME_RE.source, maxLength: 100 }),
      query: textSchema({ pattern: '\\S' }),
      above: { anyOf: [{ type: 'number' }, VAR_STRING] },
      below: { anyOf: [{ type: 'number' }, VAR_STRING] },
      action: textSchema({ enum: [...RULE_ACTIONS] }),
      for: textSchema({ pattern: DURATION_PATTERN }),
    },
    required: ['name', 'query', 'action'],
    oneOf: [isSet('above'), isSet('below')],
    additionalProperties: false,
  },
};

export const RULES_DOC: FieldDoc = {
  type: 'list of mappings',
  default: 'none',
  allowed: 'needs `prometheus`',
  more: 'See [rules on Prometheus](operations.md#rules-and-room-from-prometheus).',
  keys: {
    name: {
      type: 'string',
      default: 'required',
      allowed: '`[a-z0-9][a-z0-9_.-]*`, each once',
      meaning: 'Names the rule in events, the progress line and `status`.',
    },
    query: {
      type: 'PromQL',
      default: 'required',
      meaning: 'One value, or a vector whose worst sample counts (its labels are named).',
    },
    above: { type: 'number', default: 'one of above, below', meaning: 'The rule holds while the value is above this.' },
    below: { type: 'number', default: 'one of above, below', meaning: 'The rule holds while the value is below this.' },
    action: {
      type: 'string',
      default: 'required',
      allowed: '`pause`, `cut`',
      meaning: '`pause`: no new move (retries included) while it holds; `cut`: the throttle cuts its cap.',
    },
    for: {
      type: 'duration',
      default: '`0s` (at once)',
      allowed: '`0s` to `1d`',
      meaning: 'How long the condition must hold before the rule acts.',
    },
  },
};

/** `prometheus.url`: an http(s) base URL, without credentials, query or fragment. */
export function readPrometheusUrl(r: Reader, node: Node, path: string): string | undefined {
  const read = readHttpUrl(r, node, path, {
    example: 'http://localhost:9090',
    credentials: '; use token or token_file',
  });
  if (!read) return undefined;
  const u = read.url;
  const at = r.posOf(node);
  if (u.search || u.hash) return void r.error(path, at, 'must not have a query or fragment');
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

/** `prometheus.token | token_file`: an optional bearer token (null: none is sent). */
export function readPrometheusToken(r: Reader, section: Map<string, Entry>): string | null | undefined {
  const got = readOptionalSecret(r, section, 'token', 'prometheus.token');
  if (!got.given) return null;
  return got.value;
}

export const PROMETHEUS_TOKEN_SCHEMA = { type: 'string', pattern: ONLY_VAR_REFS } as const;
