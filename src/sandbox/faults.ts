/**
 * Fault injection for rehearsals and robustness tests, deterministic under a seed.
 *
 * Request faults run before routing, in this order: latency (every request waits `latencyMs`),
 * rate limit (one fixed one-minute window shared by all clients, where GitLab keeps one per user
 * or IP and throttle; 429 `Retry later` with GitLab's RateLimit-* headers), reset (the socket is destroyed
 * without an answer), error (503). Health probes (`/-/...`) are exempt, as they are from Rack
 * Attack. Request draws come from one PRNG seeded with `seed`, so the same request sequence meets
 * the same faults.
 *
 * Move fates are decided when a move is created: listed broken items always fail; otherwise a
 * draw keyed by (seed, kind, item, attempt) picks stuck, fail (a tenth of those `cleanup_fail`),
 * interrupted, failed_after_switch, one of the failure classes, failed_after_copy or ok. Being keyed by the attempt, a rescheduled move draws
 * anew and may succeed, independently of how requests interleave.
 *
 * The two fates of a Sidekiq job killed mid-copy (`UpdateRepositoryStorageWorker`): Sidekiq runs it
 * again with the same jid. `interrupted`: the rerun comes while the job's 30-minute exclusive lease
 * is still held, so `try_obtain` fails and the worker calls `do_fail!`: `started -> failed` with no
 * `error_message`, and the transition's callback makes the repository writable again. `stuck`: the
 * rerun comes after the lease expired (or never comes); the service runs only for a `scheduled`
 * move, so it does nothing and the move stays `started`, read-only, for good.
 *
 * `failed_after_switch` (a move interrupted after the switch): the job is killed after `track_repository` and before
 * `finish_replication!` (`UpdateRepositoryStorageMethods#execute` runs them as separate steps), then
 * rerun while its lease is held. The project already lives on the destination, the move ends
 * `started -> failed` with no `error_message` (the callback makes it writable), and the source
 * copy stays, since `remove_old_paths` never ran.
 *
 * `failed_after_copy`: the job is killed one step earlier, after `mirror_repositories` copied the
 * repository onto the destination and before `track_repository` switched it, then rerun while its
 * lease is held: `started -> failed` with no `error_message`, the item writable and still served
 * from its source, and the complete copy on the destination stays there (nothing in GitLab removes
 * it: `Repositories::ReplicateService` removes a copy only when its own replication raises).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ShardmoveError } from '../shared/errors.js';
import { SANDBOX_FAULTS_INVALID } from '../shared/sandbox-errors.js';
import { createRandom } from './random.js';
import { systemClock } from '../shared/clock.js';
import type { Clock } from '../shared/clock.js';

export interface FaultOptions {
  latencyMs: number;
  errorRate: number;
  resetRate: number;
  /** Requests per minute before 429; undefined means no limit. */
  rateLimit?: number;
  moveFailRate: number;
  /** `project:12`, `snippet:3`, `group:7` (plural kinds accepted too). */
  brokenItems: string[];
  stuckRate: number;
  /**
   * Share of moves whose job is interrupted mid-copy and rerun while its lease is held (the move
   * fails without a message, repository writable). In code only; the CLI has no flag for it yet.
   */
  interruptRate?: number;
  /**
   * Share of moves whose job is killed after the switch to the destination and rerun while its
   * lease is held: the move fails without a message, the item is on the destination, and the
   * source copy is left behind (`--move-fail-after-switch-rate`).
   */
  failAfterSwitchRate?: number;
  /**
   * Share of moves whose job is killed after the copy onto the destination and before the switch,
   * and rerun while its lease is held: the move fails without a message, the item stays on its
   * source, and the copy stays on the destination (`--move-fail-after-copy-rate`). Drawn after
   * the failure classes, so adding it changes no existing seed's outcome for the others.
   */
  failAfterCopyRate?: number;
  /**
   * Shares of moves that fail as one failure class does on GitLab (`--move-failures
   * checksum=0.05,no-space=0.01`): see INJECTED_FAILURES. Drawn after the rates above, so adding
   * them changes no existing seed's outcome for the other rates.
   */
  moveFailures?: MoveFailures;
  /**
   * How long each bulk POST's job waits in Sidekiq's queue before it runs (`--bulk-delay`), in ms
   * of the sandbox's clock; DEFAULT_BULK_DELAY_MS when unset. GitLab's bulk route only enqueues
   * `<Kind>::ScheduleBulkRepositoryShardMovesWorker`, whose wait depends on the queue's load.
   */
  bulkDelayMs?: number;
  seed: number;
}

/** A quiet instance's wait for a bulk job (a few seconds): the default of `bulkDelayMs`. */
export const DEFAULT_BULK_DELAY_MS = 2_000;
/** The longest `bulkDelayMs` accepted: a day. */
export const MAX_BULK_DELAY_MS = 86_400_000;

/**
 * The failure classes the sandbox injects by name, each as the fate that ends a move as GitLab
 * does for it (message, end state, read-only flag; docs/gitlab-behaviour.md §3.5):
 * - `checksum`: `started -> failed`, `Failed to verify <type> repository checksum from <a> to <b>`, writable.
 * - `read-only`: the worker found another move's lease: `scheduled -> failed`, no message, and the
 *   read-only flag stays (no callback on that transition), so every later move is refused.
 * - `lease-held`: a Sidekiq rerun within the job's own lease: `started -> failed`, no message, writable.
 * - `no-space`: `started -> failed`, Gitaly's snapshot extraction out of room (NO_SPACE_ERROR), writable.
 * - `source-missing`: `started -> failed`, `5:invalid source repository.` (Gitaly's NotFound), writable.
 * - `gitaly-unavailable`: `started -> failed`, a gRPC UNAVAILABLE (`14:...`), writable.
 * - `stuck-queued`: the job never runs: `scheduled` and read-only for good.
 * - `stuck-running`: as `--stuck-rate`: `started` and read-only for good.
 * - `tar-failed`: `started -> failed`, Gitaly's snapshot extraction failing because the stream was
 *   cut short (tar's exit status 2, the same text as `no-space` from 16.1), writable.
 * - `timeout`: `started -> failed`, `4:Deadline Exceeded.` (the 6-hour Gitaly call limit), writable.
 *
 * Before the move lease (16.6, ./moves/releases.ts) `read-only` and `lease-held` cannot happen as
 * such: a move whose fate is `read_only_left` runs normally, and an `interrupted` one stays
 * `started` (the rerun finds it started and does nothing). Before 16.7 no move record carries the
 * message: every failure above shows `error_message` absent.
 */
export const INJECTED_FAILURES = {
  checksum: 'fail',
  'read-only': 'read_only_left',
  'lease-held': 'interrupted',
  'no-space': 'no_space',
  'source-missing': 'source_missing',
  'gitaly-unavailable': 'unavailable',
  'stuck-queued': 'stuck_queued',
  'stuck-running': 'stuck',
  'tar-failed': 'tar_cut_short',
  timeout: 'deadline_exceeded',
} as const satisfies Record<string, MoveFate>;

export type InjectedFailure = keyof typeof INJECTED_FAILURES;
export type MoveFailures = Partial<Record<InjectedFailure, number>>;

/**
 * Parses `checksum=0.05,no-space=0.01` (as typed after `--move-failures`); throws FaultOptionsError
 * worded in the flag's terms. Each class at most once: a second `no-space=` is a typing mistake
 * (which one was meant?), not a request to add the two.
 */
export function parseMoveFailures(text: string): MoveFailures {
  const out: MoveFailures = {};
  const classes = Object.keys(INJECTED_FAILURES).join(', ');
  for (const raw of text
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const m = /^([a-z-]+)=([0-9.eE+-]+)$/.exec(raw);
    const name = m?.[1] as InjectedFailure | undefined;
    if (!m || name === undefined || !(name in INJECTED_FAILURES)) {
      throw new FaultOptionsError(`--move-failures: "${raw}" is not class=rate (classes: ${classes})`);
    }
    const rate = Number(m[2]);
    if (!Number.isFinite(rate) || rate < 0 || rate > 1)
      throw new FaultOptionsError(`--move-failures: ${name}=${m[2]}: a rate is a fraction of moves, from 0 to 1`);
    if (out[name] !== undefined)
      throw new FaultOptionsError(
        `--move-failures: ${name} is given twice (${name}=${out[name]} and ${name}=${m[2]}); give each class once`,
      );
    out[name] = rate;
  }
  return out;
}

/** The share of moves that end badly, all flags together (what `--move-fail-rate` alone was). */
export function totalFailRate(options: FaultOptions): number {
  const classes = Object.values(options.moveFailures ?? {}).reduce((a, v) => a + v, 0);
  return (
    options.stuckRate +
    options.moveFailRate +
    (options.interruptRate ?? 0) +
    (options.failAfterSwitchRate ?? 0) +
    (options.failAfterCopyRate ?? 0) +
    classes
  );
}

export const NO_FAULTS: FaultOptions = {
  latencyMs: 0,
  errorRate: 0,
  resetRate: 0,
  moveFailRate: 0,
  brokenItems: [],
  stuckRate: 0,
  interruptRate: 0,
  failAfterSwitchRate: 0,
  failAfterCopyRate: 0,
  seed: 1,
};

/** How a move will end, decided when it is created. */
export type MoveFate =
  | 'ok'
  | 'fail'
  | 'cleanup_fail'
  | 'stuck'
  | 'interrupted'
  | 'failed_after_switch'
  | 'failed_after_copy'
  | 'no_space'
  /** Out of room during the wiki's copy, the repository's copy complete (decided by the engine). */
  | 'no_space_wiki'
  | 'read_only_left'
  | 'source_missing'
  | 'unavailable'
  | 'stuck_queued'
  | 'tar_cut_short'
  | 'deadline_exceeded';

export interface Faults {
  /** Runs before routing; returns true when it already answered (or destroyed) the request. */
  onRequest(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /**
   * `attempt` is which move of the item this is (1 for its first); without it, moves are counted in
   * memory since this injector was made, which a restarted sandbox has forgotten.
   */
  moveFate(kind: string, itemId: number, attempt?: number): MoveFate;
  /** Counters of injected faults by kind. */
  counts(): Record<string, number>;
}

/** Fault options that cannot be used (bad rate, malformed broken item). */
export class FaultOptionsError extends ShardmoveError<typeof SANDBOX_FAULTS_INVALID> {
  constructor(message: string) {
    super(SANDBOX_FAULTS_INVALID, message);
  }
}

/** Share of failing moves that fail in cleanup (`cleanup failed`) rather than in the copy. */
export const CLEANUP_FAIL_SHARE = 0.1;
/** The throttles GitLab names in RateLimit-Name for API requests with and without credentials. */
export const RATE_LIMIT_NAME = 'throttle_authenticated_api';
export const RATE_LIMIT_NAME_ANONYMOUS = 'throttle_unauthenticated_api';

/** Whether a request carries any credential (the throttle name depends on it; validity does not matter here). */
function carriesCredentials(req: IncomingMessage): boolean {
  const h = req.headers;
  if (h['private-token'] !== undefined || h.authorization !== undefined || h['job-token'] !== undefined) return true;
  if (typeof h.cookie === 'string' && h.cookie.includes('_service_session=')) return true;
  return /[?&](private_token|access_token|job_token)=/.test(req.url ?? '');
}
const WINDOW_MS = 60_000;

const KINDS: Record<string, string> = {
  project: 'project',
  projects: 'project',
  snippet: 'snippet',
  snippets: 'snippet',
  group: 'group',
  groups: 'group',
};

/**
 * Parses `kind:id` entries, each possibly a comma-separated list as typed after `--broken-items`
 * (`project:12,snippets:3`), into normalised keys (`project:12`, `snippet:3`); throws
 * FaultOptionsError on a bad entry. The one parser of broken items: the CLI hands its text over.
 */
export function parseBrokenItems(items: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const raw of items
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([a-z]+):(\d+)$/.exec(raw);
    const kind = m ? KINDS[m[1] as string] : undefined;
    if (!m || !kind)
      throw new FaultOptionsError(`broken item "${raw}" is not kind:id (kind: project, snippet or group)`);
    out.add(`${kind}:${Number(m[2])}`);
  }
  return out;
}

function checkRate(name: string, v: number): void {
  if (!Number.isFinite(v) || v < 0 || v > 1) throw new FaultOptionsError(`${name} must be between 0 and 1, got ${v}`);
}

/** A uniform draw in [0, 1) from integers, independent of any other draw. */
function keyedDraw(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) h = Math.imul(h ^ (p >>> 0), 0x85ebca6b) ^ (h >>> 13);
  return createRandom(h)();
}

function kindCode(kind: string): number {
  let h = 7;
  for (let i = 0; i < kind.length; i++) h = Math.imul(h, 31) + kind.charCodeAt(i);
  return h;
}

/**
 * Builds the fault injector. `clock` is the sandbox's: it times the rate-limit window and the
 * injected latency, so a simulated clock skips the latency instead of waiting it out.
 */
export function createFaults(options: FaultOptions, clock: Pick<Clock, 'now' | 'sleep'> = systemClock): Faults {
  const interruptRate = options.interruptRate ?? 0;
  const switchRate = options.failAfterSwitchRate ?? 0;
  const copyRate = options.failAfterCopyRate ?? 0;
  for (const [name, v] of [
    ['errorRate', options.errorRate],
    ['resetRate', options.resetRate],
    ['moveFailRate', options.moveFailRate],
    ['stuckRate', options.stuckRate],
    ['interruptRate', interruptRate],
    ['failAfterSwitchRate', switchRate],
    ['failAfterCopyRate', copyRate],
  ] as const)
    checkRate(name, v);
  const classes = Object.entries(options.moveFailures ?? {}) as [InjectedFailure, number][];
  for (const [name, v] of classes) {
    if (!(name in INJECTED_FAILURES)) throw new FaultOptionsError(`unknown move failure class ${name}`);
    checkRate(`move failure ${name}`, v);
  }
  const before = options.stuckRate + options.moveFailRate + interruptRate + switchRate;
  if (totalFailRate(options) > 1 + 1e-9) {
    throw new FaultOptionsError(
      'stuckRate + moveFailRate + interruptRate + failAfterSwitchRate + moveFailures + failAfterCopyRate must not exceed 1',
    );
  }
  // In INJECTED_FAILURES order, so the bands do not depend on how the flag was typed.
  const bands = (Object.keys(INJECTED_FAILURES) as InjectedFailure[])
    .map((name) => [name, options.moveFailures?.[name] ?? 0] as const)
    .filter(([, v]) => v > 0);
  if (!Number.isFinite(options.latencyMs) || options.latencyMs < 0)
    throw new FaultOptionsError(`latencyMs must be >= 0, got ${options.latencyMs}`);
  const bulkDelay = options.bulkDelayMs;
  if (bulkDelay !== undefined && (!Number.isFinite(bulkDelay) || bulkDelay < 0 || bulkDelay > MAX_BULK_DELAY_MS))
    throw new FaultOptionsError(`bulkDelayMs must be from 0 to ${MAX_BULK_DELAY_MS} (a day), got ${bulkDelay}`);
  if (options.rateLimit !== undefined && (!Number.isInteger(options.rateLimit) || options.rateLimit < 1)) {
    throw new FaultOptionsError(`rateLimit must be a positive integer (requests per minute), got ${options.rateLimit}`);
  }
  const broken = parseBrokenItems(options.brokenItems);
  const draw = createRandom(options.seed);
  const attempts = new Map<string, number>();
  const counts: Record<string, number> = {};
  const bump = (k: string) => {
    counts[k] = (counts[k] ?? 0) + 1;
  };
  let windowStart = -1;
  let observed = 0;
  const requestFaults =
    options.latencyMs > 0 || options.errorRate > 0 || options.resetRate > 0 || options.rateLimit !== undefined;

  return {
    async onRequest(req, res) {
      if (!requestFaults || (req.url ?? '').startsWith('/-/')) return false;
      if (options.latencyMs > 0) {
        bump('latency');
        await clock.sleep(options.latencyMs);
      }
      if (options.rateLimit !== undefined) {
        const t = clock.now();
        const start = Math.floor(t / WINDOW_MS) * WINDOW_MS;
        if (start !== windowStart) {
          windowStart = start;
          observed = 0;
        }
        observed++;
        if (observed > options.rateLimit) {
          bump('rate_limit');
          const reset = start + WINDOW_MS;
          const body = 'Retry later\n';
          res.writeHead(429, {
            'content-type': 'text/plain',
            'content-length': String(Buffer.byteLength(body)),
            'retry-after': String(Math.max(1, Math.ceil((reset - t) / 1000))),
            'ratelimit-name': carriesCredentials(req) ? RATE_LIMIT_NAME : RATE_LIMIT_NAME_ANONYMOUS,
            'ratelimit-limit': String(options.rateLimit),
            'ratelimit-observed': String(observed),
            'ratelimit-remaining': '0',
            'ratelimit-reset': String(Math.floor(reset / 1000)),
            'ratelimit-resettime': new Date(reset).toUTCString(),
          });
          res.end(body);
          return true;
        }
      }
      // Both draws happen on every request so one option's rate does not shift the other's sequence.
      const resetDraw = draw();
      const errorDraw = draw();
      if (resetDraw < options.resetRate) {
        bump('reset');
        req.socket.destroy();
        return true;
      }
      if (errorDraw < options.errorRate) {
        bump('error');
        const body = JSON.stringify({ message: '503 Service Unavailable' });
        res.writeHead(503, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
        res.end(body);
        return true;
      }
      return false;
    },

    moveFate(kind, itemId, given) {
      const k = KINDS[kind] ?? kind;
      const key = `${k}:${itemId}`;
      if (broken.has(key)) {
        bump('move_broken');
        return 'fail';
      }
      const attempt = given ?? (attempts.get(key) ?? 0) + 1;
      attempts.set(key, attempt);
      if (
        options.stuckRate === 0 &&
        options.moveFailRate === 0 &&
        interruptRate === 0 &&
        switchRate === 0 &&
        copyRate === 0 &&
        bands.length === 0
      )
        return 'ok';
      const r = keyedDraw(options.seed, kindCode(k), itemId, attempt);
      if (r < options.stuckRate) {
        bump('move_stuck');
        return 'stuck';
      }
      if (r < options.stuckRate + options.moveFailRate) {
        if (keyedDraw(options.seed, kindCode(k), itemId, attempt, 1) < CLEANUP_FAIL_SHARE) {
          bump('move_cleanup_fail');
          return 'cleanup_fail';
        }
        bump('move_fail');
        return 'fail';
      }
      if (r < options.stuckRate + options.moveFailRate + interruptRate) {
        bump('move_interrupted');
        return 'interrupted';
      }
      if (r < options.stuckRate + options.moveFailRate + interruptRate + switchRate) {
        bump('move_failed_after_switch');
        return 'failed_after_switch';
      }
      let edge = before;
      for (const [name, v] of bands) {
        edge += v;
        if (r < edge) {
          bump(`move_class_${name}`);
          return INJECTED_FAILURES[name];
        }
      }
      if (r < edge + copyRate) {
        bump('move_failed_after_copy');
        return 'failed_after_copy';
      }
      return 'ok';
    },

    counts: () => ({ ...counts }),
  };
}
