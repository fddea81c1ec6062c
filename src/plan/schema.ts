/**
 * Plan version 1: the fields, their types and defaults. Walks the YAML tree once, reports every type
 * problem at its node, fills in defaults and produces the normalised Plan. Ranges and cross-field
 * checks are the named rules in rules.ts; this file only decides what each field is.
 */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import { readCredentials } from './credentials.js';
import { formatPlanDuration } from './durations.js';
import { boolean, duration, integer, readEnum } from './fields.js';
import type { Entry, Reader } from './reader.js';
import type { Credentials, Kind, MoveMode, Plan } from './types.js';
import { KINDS } from './types.js';

/** Defaults for every optional field (durations in ms). */
export const DEFAULTS = {
  timeoutMs: 30_000,
  kinds: KINDS,
  mode: 'throttled' as MoveMode,
  concurrency: 10,
  pollIntervalMs: 5_000,
  stuckScheduledAfterMs: 86_400_000,
  stuckRunningAfterMs: 3_600_000,
  stuckRunningPerGbMs: 1_800_000,
  maxAttempts: 3,
  backoffMs: 30_000,
  verify: true,
  geoResync: false,
} as const;

/** `poll.min_interval` when the plan does not set it (issue 11). */
export const DEFAULT_MIN_INTERVAL_MS = 250;

const TOP = ['version', 'name', 'instance', 'move', 'weights', 'poll', 'retry', 'verify', 'geo'];
const INSTANCE = ['url', 'token', 'token_file', 'oauth', 'sudo', 'timeout'];
const MOVE = ['from', 'to', 'kinds', 'mode', 'concurrency'];
const POLL = ['interval', 'min_interval', 'stuck_scheduled_after', 'stuck_running_after', 'stuck_running_per_gb', 'stuck_after'];
const RETRY = ['max_attempts', 'backoff'];
const GEO = ['resync'];
const NAME_RE = /^[a-z0-9][a-z0-9_-]*$/;

/** The schema's output: the plan (defaults filled in), the weights as written, and fields that failed. */
export interface SchemaResult {
  plan: Plan;
  /** The `weights` mapping exactly as the plan wrote it (before the default is merged in). */
  planWeights: Record<string, number>;
  /** Paths whose values could not be read; rules skip checks that involve them. */
  invalid: Set<string>;
}

/** Reads the whole plan tree. Never throws: problems go to the reader. */
export function readPlanTree(r: Reader, root: Node | null): SchemaResult {
  const invalid = new Set<string>();
  const fail = (path: string) => {
    invalid.add(path);
    return undefined;
  };
  r.mark('', r.posOf(root));
  const top = root === null || r.isNull(root) ? undefined : r.map(root, '', TOP);
  if (!top) {
    if (root === null || r.isNull(root)) r.error('', { line: 1, col: 1 }, 'the plan is empty; start with "version: 1"');
    return { plan: emptyPlan(), planWeights: {}, invalid: new Set(['*']) };
  }
  const get = (m: Map<string, Entry> | undefined, k: string): Node | null => m?.get(k)?.value ?? null;
  const required = (m: Map<string, Entry> | undefined, k: string, path: string, parentPath: string): Node | null => {
    const node = get(m, k);
    if (m && r.isNull(node)) {
      r.error(path, m.get(k) ? r.posOf(m.get(k)!.key) : r.at(parentPath), `missing required field ${k}`);
      invalid.add(path);
    }
    return node;
  };
  const section = (k: string, known: string[]): Map<string, Entry> | undefined => {
    const node = get(top, k);
    if (node) r.mark(k, r.posOf(node));
    if (r.isNull(node)) return new Map();
    const m = r.map(node, k, known);
    if (!m) invalid.add(k);
    return m;
  };

  // version
  const versionNode = required(top, 'version', 'version', '');
  if (versionNode && !r.isNull(versionNode)) {
    r.mark('version', r.posOf(versionNode));
    if (!isScalar(versionNode) || versionNode.value !== 1) r.error('version', r.posOf(versionNode), 'unsupported plan version; this shardmove reads version: 1');
  }

  // name
  let name = '';
  const nameNode = required(top, 'name', 'name', '');
  if (nameNode && !r.isNull(nameNode)) {
    r.mark('name', r.posOf(nameNode));
    const s = r.string(nameNode, 'name');
    if (!s) fail('name');
    else if (!NAME_RE.test(s.value) || s.value.length > 100) {
      r.error('name', r.posOf(nameNode), 'must match [a-z0-9][a-z0-9_-]* (at most 100 characters): it names the checkpoint file');
      fail('name');
    } else name = s.value;
  }

  // instance
  const instNode = required(top, 'instance', 'instance', '');
  const instance = section('instance', INSTANCE);
  let url = '';
  let credentials: Credentials | undefined;
  let sudo: string | null = null;
  let timeoutMs: number = DEFAULTS.timeoutMs;
  if (instance && instNode && !r.isNull(instNode)) {
    const urlNode = required(instance, 'url', 'instance.url', 'instance');
    if (urlNode && !r.isNull(urlNode)) url = readUrl(r, urlNode) ?? (fail('instance.url') ?? '');
    credentials = readCredentials(r, instance, r.posOf(instNode));
    if (!credentials) invalid.add('instance.credentials');
    const sudoNode = get(instance, 'sudo');
    if (!r.isNull(sudoNode)) sudo = readSudo(r, sudoNode!) ?? null;
    timeoutMs = duration(r, get(instance, 'timeout'), 'instance.timeout', DEFAULTS.timeoutMs, invalid);
  } else invalid.add('instance');

  // move
  const moveNode = required(top, 'move', 'move', '');
  const move = section('move', MOVE);
  let from: string[] = [];
  let to = '';
  let kinds: Kind[] = [...DEFAULTS.kinds];
  let mode: MoveMode = DEFAULTS.mode;
  let concurrency: number = DEFAULTS.concurrency;
  if (move && moveNode && !r.isNull(moveNode)) {
    const fromNode = required(move, 'from', 'move.from', 'move');
    if (fromNode && !r.isNull(fromNode)) from = readStorageList(r, fromNode, 'move.from') ?? (fail('move.from') ?? []);
    const toNode = required(move, 'to', 'move.to', 'move');
    if (toNode && !r.isNull(toNode)) to = readStorage(r, toNode, 'move.to') ?? (fail('move.to') ?? '');
    const kindsNode = get(move, 'kinds');
    if (!r.isNull(kindsNode)) kinds = readKinds(r, kindsNode!) ?? (fail('move.kinds') ?? kinds);
    const modeNode = get(move, 'mode');
    if (!r.isNull(modeNode)) mode = readEnum(r, modeNode!, 'move.mode', ['throttled', 'bulk'] as const) ?? (fail('move.mode') ?? mode);
    concurrency = integer(r, get(move, 'concurrency'), 'move.concurrency', DEFAULTS.concurrency, invalid);
  } else invalid.add('move');

  // weights: the default (destination 100, every source 0) with the plan's own weights merged over it
  const planWeights: Record<string, number> = {};
  const weightsNode = get(top, 'weights');
  if (!r.isNull(weightsNode)) {
    r.mark('weights', r.posOf(weightsNode));
    const entries = r.record(weightsNode, 'weights');
    if (!entries) invalid.add('weights');
    for (const e of entries ?? []) {
      const path = `weights.${e.name}`;
      r.mark(path, r.posOf(e.value, r.posOf(e.key)));
      if (Object.prototype.hasOwnProperty.call(planWeights, e.name)) {
        r.error(path, r.posOf(e.key), 'listed twice');
        continue;
      }
      const w = integer(r, e.value, path, Number.NaN, invalid);
      if (r.isNull(e.value)) r.error(path, r.posOf(e.key), 'expected a weight from 0 to 100');
      else if (!Number.isNaN(w)) planWeights[e.name] = w;
    }
  }
  const weights: Record<string, number> = {};
  for (const s of from) weights[s] = 0;
  if (to) weights[to] = 100;
  Object.assign(weights, planWeights);

  // poll, retry, verify, geo
  const poll = section('poll', POLL);
  const retry = section('retry', RETRY);
  const geo = section('geo', GEO);
  const plan: Plan = {
    version: 1,
    name,
    instance: { url, credentials: credentials ?? { type: 'token', token: '' }, sudo, timeoutMs },
    move: { from, to, kinds, mode, concurrency },
    weights,
    poll: readPoll(r, poll, invalid),
    retry: {
      maxAttempts: integer(r, get(retry, 'max_attempts'), 'retry.max_attempts', DEFAULTS.maxAttempts, invalid),
      backoffMs: duration(r, get(retry, 'backoff'), 'retry.backoff', DEFAULTS.backoffMs, invalid),
    },
    verify: boolean(r, get(top, 'verify'), 'verify', DEFAULTS.verify, invalid),
    geo: { resync: boolean(r, get(geo, 'resync'), 'geo.resync', DEFAULTS.geoResync, invalid) },
  };
  return { plan, planWeights, invalid };
}

function emptyPlan(): Plan {
  return {
    version: 1,
    name: '',
    instance: { url: '', credentials: { type: 'token', token: '' }, sudo: null, timeoutMs: DEFAULTS.timeoutMs },
    move: { from: [], to: '', kinds: [...DEFAULTS.kinds], mode: DEFAULTS.mode, concurrency: DEFAULTS.concurrency },
    weights: {},
    poll: {
      intervalMs: DEFAULTS.pollIntervalMs,
      minIntervalMs: DEFAULT_MIN_INTERVAL_MS,
      stuckScheduledAfterMs: DEFAULTS.stuckScheduledAfterMs,
      stuckRunningAfterMs: DEFAULTS.stuckRunningAfterMs,
      stuckRunningPerGbMs: DEFAULTS.stuckRunningPerGbMs,
    },
    retry: { maxAttempts: DEFAULTS.maxAttempts, backoffMs: DEFAULTS.backoffMs },
    verify: DEFAULTS.verify,
    geo: { resync: DEFAULTS.geoResync },
  };
}

/**
 * The poll section. `stuck_after` was the one stuck limit before issue 13, counted from scheduling,
 * so moves queued in `scheduled` on a busy instance were quarantined. It is now the deprecated name
 * of `stuck_running_after` and still works, with a warning; a plan that uses it keeps its flat
 * running limit (no allowance per GiB) unless it sets `stuck_running_per_gb`.
 */
function readPoll(r: Reader, poll: Map<string, Entry> | undefined, invalid: Set<string>): Plan['poll'] {
  const get = (k: string): Node | null => poll?.get(k)?.value ?? null;
  const intervalMs = duration(r, get('interval'), 'poll.interval', DEFAULTS.pollIntervalMs, invalid);
  // Issue 11: the shortest gap between two polls when completion prediction asks for an early one.
  // Unset, it never exceeds poll.interval (rules.ts rejects a written one that does).
  const minIntervalMs = duration(r, get('min_interval'), 'poll.min_interval', Math.min(DEFAULT_MIN_INTERVAL_MS, intervalMs), invalid);
  const stuckScheduledAfterMs = duration(r, get('stuck_scheduled_after'), 'poll.stuck_scheduled_after', DEFAULTS.stuckScheduledAfterMs, invalid);
  const legacy = poll?.get('stuck_after');
  const running = get('stuck_running_after');
  let stuckRunningAfterMs = duration(r, running, 'poll.stuck_running_after', DEFAULTS.stuckRunningAfterMs, invalid);
  let usesLegacy = false;
  if (legacy && !r.isNull(legacy.value)) {
    if (!r.isNull(running)) {
      r.error('poll.stuck_after', r.posOf(legacy.key), 'is the deprecated name of poll.stuck_running_after; write only stuck_running_after');
      invalid.add('poll.stuck_after');
    } else {
      usesLegacy = true;
      stuckRunningAfterMs = duration(r, legacy.value, 'poll.stuck_after', DEFAULTS.stuckRunningAfterMs, invalid);
      r.warn(
        'poll.stuck_after',
        r.posOf(legacy.key),
        'deprecated: write poll.stuck_running_after. It limits only the time a move runs (started, replicated); time queued in scheduled ' +
          `has its own limit, poll.stuck_scheduled_after (default ${formatPlanDuration(DEFAULTS.stuckScheduledAfterMs)}); ` +
          'as before, no allowance per GiB of repository is added unless poll.stuck_running_per_gb is set',
      );
      // Rules about the running limit report where it is written.
      r.mark('poll.stuck_running_after', r.posOf(legacy.value));
      if (invalid.has('poll.stuck_after')) invalid.add('poll.stuck_running_after');
    }
  }
  return {
    intervalMs,
    minIntervalMs,
    stuckScheduledAfterMs,
    stuckRunningAfterMs,
    stuckRunningPerGbMs: duration(r, get('stuck_running_per_gb'), 'poll.stuck_running_per_gb', usesLegacy ? 0 : DEFAULTS.stuckRunningPerGbMs, invalid),
  };
}

function readUrl(r: Reader, node: Node): string | undefined {
  const at = r.posOf(node);
  r.mark('instance.url', at);
  const s = r.string(node, 'instance.url');
  if (!s) return undefined;
  let u: URL;
  try {
    u = new URL(s.value.trim());
  } catch {
    r.error('instance.url', at, 'not a valid URL; expected e.g. https://gitlab.example.com');
    return undefined;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    r.error('instance.url', at, 'must be an http:// or https:// URL');
    return undefined;
  }
  if (u.username || u.password) {
    r.error('instance.url', at, 'must not contain credentials; use token, token_file or oauth');
    return undefined;
  }
  if (u.search || u.hash) {
    r.error('instance.url', at, 'must not have a query or fragment');
    return undefined;
  }
  let path = u.pathname.replace(/\/+$/, '');
  if (/\/api\/v4$/.test(path)) {
    path = path.slice(0, -'/api/v4'.length);
    r.warn('instance.url', at, 'write the instance\'s base URL; the /api/v4 suffix was removed');
  }
  return `${u.protocol}//${u.host}${path}`;
}

function readSudo(r: Reader, node: Node): string | undefined {
  const at = r.posOf(node);
  r.mark('instance.sudo', at);
  if (isScalar(node) && typeof node.value === 'number') {
    if (Number.isInteger(node.value) && node.value > 0) return String(node.value);
    r.error('instance.sudo', at, 'expected a user id (positive integer) or a username');
    return undefined;
  }
  const s = r.string(node, 'instance.sudo');
  if (!s) return undefined;
  const v = s.value.trim();
  if (v === '' || /\s/.test(v)) {
    r.error('instance.sudo', at, 'expected a user id or a username (no spaces), or null');
    return undefined;
  }
  return v;
}

function readStorage(r: Reader, node: Node, path: string): string | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  const s = r.string(node, path);
  if (!s) return undefined;
  if (s.value === '' || /[\s/\\]/.test(s.value) || s.value.length > 255) {
    r.error(path, at, 'expected a storage name (no spaces or slashes)');
    return undefined;
  }
  return s.value;
}

function readStorageList(r: Reader, node: Node, path: string): string[] | undefined {
  r.mark(path, r.posOf(node));
  const items = r.seq(node, path, 'storage names');
  if (!items) return undefined;
  if (items.length === 0) {
    r.error(path, r.posOf(node), 'list at least one source storage');
    return undefined;
  }
  const out: string[] = [];
  let ok = true;
  items.forEach((item, i) => {
    const s = readStorage(r, item, `${path}[${i}]`);
    if (s === undefined) ok = false;
    else out.push(s);
  });
  return ok ? out : undefined;
}

function readKinds(r: Reader, node: Node): Kind[] | undefined {
  r.mark('move.kinds', r.posOf(node));
  const items = r.seq(node, 'move.kinds', KINDS.join(', '));
  if (!items) return undefined;
  if (items.length === 0) {
    r.error('move.kinds', r.posOf(node), `list at least one of ${KINDS.join(', ')}`);
    return undefined;
  }
  const out: Kind[] = [];
  let ok = true;
  items.forEach((item, i) => {
    const path = `move.kinds[${i}]`;
    const k = readEnum(r, item, path, KINDS);
    if (k === undefined) ok = false;
    else if (out.includes(k)) {
      r.error(path, r.posOf(item), `${k} is listed twice`);
      ok = false;
    } else out.push(k);
  });
  return ok ? out : undefined;
}
