/**
 * Step 1, pre-flight: who are we talking to, with what rights, and is anything on the sources
 * already half-moved. Read-only, so it is safe to repeat after a restore and runs in a dry run too.
 */
import type { InstanceApi, MoveRecord } from '../api/types.js';
import { TERMINAL_MOVE_STATES } from '../api/types.js';
import type { PreflightOutput } from '../machine/types.js';
import type { Kind } from '../plan/types.js';
import { checkCapacity } from './capacity.js';
import { resolveSelection } from './select-resolve.js';
import type { ActorDeps } from './types.js';
import { codeOf } from '../shared/errors.js';
import {
  ADMIN_MODE,
  FOREIGN_MOVES,
  NOT_ADMIN,
  PROMETHEUS_QUERY_REJECTED,
  StepError,
  TOKEN_UNUSABLE,
} from './errors.js';
import { describeForeignMoves, foreignOf } from './foreign-moves.js';
import type { ForeignMoves } from './foreign-moves.js';
import type { PreflightStore } from '../store/views.js';

const DAY_MS = 86_400_000;
/** Moves scanned per kind by the read-only audit (newest first): enough for any live move. */
const AUDIT_PAGES = 10;
const AUDIT_PER_PAGE = 100;

/** Runs the pre-flight checks; throws a StepError when the run must not start. */
export async function runPreflight(deps: ActorDeps<PreflightStore>): Promise<PreflightOutput> {
  const { api, plan, clock, log } = deps;
  const warnings: string[] = [];
  let tokenExpiresAt: string | null = null;
  const { version, enterprise } = await api.version();
  const user = await api.currentUser();
  if (!user.isAdmin) {
    throw new StepError(
      NOT_ADMIN,
      `the token's user "${user.username}" is not an administrator; moves and storage filters need an admin token`,
    );
  }
  await probeAdminApi(api, user.username);
  log.info({ version, username: user.username }, 'instance identified');

  if (plan.instance.credentials.type === 'token') {
    const info = await api.inspectToken(plan.instance.credentials.token);
    if (info === null) {
      warnings.push(
        'the instance has no token inspection endpoint (POST /admin/token): token scopes and expiry were not checked',
      );
    } else {
      if (info.revoked) throw new StepError(TOKEN_UNUSABLE, "the run's token is revoked");
      if (!info.scopes.includes('api')) {
        throw new StepError(
          TOKEN_UNUSABLE,
          `the run's token has scopes [${info.scopes.join(', ')}]; moves need the "api" scope`,
        );
      }
      tokenExpiresAt = info.expiresAt;
      const expiry = expiryWarning(info.expiresAt, clock.now());
      if (expiry) warnings.push(expiry);
    }
  }

  warnings.push(...(await probeRules(deps)));

  const access: PreflightOutput['access'] = {};
  for (const kind of plan.move.kinds) {
    const a = await api.kindAccess(kind, enterprise);
    access[kind] = a.mode;
    if (a.mode === 'records') {
      warnings.push(
        `${kind}: ${a.reason ?? 'the instance does not expose their storage'}. They are moved with one bulk move per source storage ` +
          'and verified by the move records it creates, not by a listing',
      );
    } else if (a.mode === 'unsupported') {
      warnings.push(`${kind} skipped: ${a.reason ?? 'the instance cannot move them'}`);
      log.warn({ kind, reason: a.reason }, 'kind skipped: the instance has no move API for it');
    }
  }

  // What moves (move.select): every name on the instance, before the room is judged on the selection.
  // A revert's or a reviewed list's items are given: they were chosen before.
  if (!deps.itemsGiven) warnings.push(...(await resolveSelection(deps, access)));

  const foreign: ForeignMoves[] = [];
  let sawAll = true;
  for (const kind of plan.move.kinds) {
    if (access[kind] === 'unsupported') continue;
    const { moves: busy, complete } = await auditInFlightMoves(api, kind, plan.move.from);
    sawAll &&= complete;
    foreign.push({ kind, moves: foreignOf(deps.store, kind, busy) });
    if (busy.length > 0) {
      const ids = busy
        .slice(0, 20)
        .map((m) => `${m.itemId} (move ${m.id}, ${m.state})`)
        .join(', ');
      warnings.push(
        `${busy.length} ${kind} on the sources already have a move in flight and are read-only: ${ids}${busy.length > 20 ? ', ...' : ''}`,
      );
    }
  }
  // What pre-flight would refuse, said by a dry run instead (and counted by --detailed-exitcode).
  const wouldRefuse: string[] = [...(deps.refusedBeforePreflight ?? [])];
  // A revert judges each of its items on the instance itself, and skips one that someone else moves.
  const others = deps.itemsGiven === true ? null : describeForeignMoves(foreign, sawAll);
  if (others !== null) {
    if (deps.acceptForeignMoves) warnings.push(`--accept-foreign-moves: going on beside them: ${others}`);
    else if (deps.dryRun) wouldRefuse.push(others);
    else throw new StepError(FOREIGN_MOVES, `refusing: ${others}. Nothing was written`);
  }
  const notes: string[] = [];
  // Last: the room is judged on what is on the sources now, after every other refusal. Not for
  // given items (a revert): each goes back where it came from, and what is on the sources now is
  // mostly what stays there.
  // A reviewed list's room is judged on its own items once they are seeded (./given-list.ts).
  if (deps.itemsGiven === 'list') log.info('room: judged on the reviewed list');
  else if (deps.itemsGiven)
    warnings.push(
      `the room on ${plan.move.to.join(', ')} was not checked: the items go back to the storages they came from`,
    );
  else {
    const room = await checkCapacity(deps, access, version);
    warnings.push(...room.warnings);
    notes.push(...room.notes);
    if (room.refusal) wouldRefuse.push(room.refusal);
  }
  return {
    version,
    enterprise,
    username: user.username,
    warnings,
    notes,
    tokenExpiresAt,
    access,
    ...(deps.dryRun ? { wouldRefuse } : {}),
  };
}

/**
 * One admin-only read (`GET /application/settings`, which the weights step reads anyway) before
 * anything else: `GET /user` reports `is_admin` even when Admin Mode is on and the token lacks the
 * `admin_mode` scope, and then every admin endpoint answers a bare 403 while admin-only filters
 * (`repository_storage`) are dropped silently. Pre-flight must say so before any write.
 */
async function probeAdminApi(api: InstanceApi, username: string): Promise<void> {
  try {
    await api.getWeights();
  } catch (err) {
    const e = (err ?? {}) as { code?: unknown; scope?: unknown };
    if (e.code !== 'SHARDMOVE_API_FORBIDDEN') throw err;
    if (typeof e.scope === 'string' && e.scope !== '') {
      throw new StepError(
        TOKEN_UNUSABLE,
        `the run's token lacks the "${e.scope}" scope, which the instance requires for its admin API (GET /application/settings answered 403 insufficient_scope)`,
      );
    }
    throw new StepError(
      ADMIN_MODE,
      `the token's user "${username}" is an administrator, but the admin API refuses the token (GET /application/settings answered 403): ` +
        'the instance has Admin Mode on and the token lacks the "admin_mode" scope. Add the admin_mode scope to the token ' +
        '(or create one with the api and admin_mode scopes) and run again (pre-flight stops the run before any write)',
    );
  }
}

/**
 * Every throttle rule's query, once: a query Prometheus rejects is a mistake in the plan, refused
 * here before any write with Prometheus's own words. A Prometheus that does not answer is what
 * `prometheus.on_error` is for: a warning now, and the run decides at each reading.
 */
async function probeRules(deps: ActorDeps<PreflightStore>): Promise<string[]> {
  const rules = deps.plan.throttle?.rules ?? [];
  if (!deps.prometheus || rules.length === 0) return [];
  const warnings: string[] = [];
  for (const rule of rules) {
    try {
      const samples = await deps.prometheus.query(rule.query);
      deps.log.info({ rule: rule.name, samples: samples.length }, 'throttle rule query answered');
      if (samples.length === 0)
        warnings.push(
          `throttle rule ${rule.name}: the query returns no sample now (check its labels); it holds only when a sample is past its bound`,
        );
    } catch (err) {
      if (codeOf(err) === 'SHARDMOVE_PROMETHEUS_REJECTED') {
        throw new StepError(
          PROMETHEUS_QUERY_REJECTED,
          `throttle rule ${rule.name}: ${(err as Error).message} (query: ${rule.query})`,
        );
      }
      warnings.push(
        `throttle rule ${rule.name}: ${(err as Error).message}; prometheus.on_error: ${deps.plan.prometheus?.onError ?? 'pause'} applies during the run`,
      );
    }
  }
  return warnings;
}

/** A warning when the token expires within 7 days (GitLab tokens expire at the start of that day, UTC). */
export function expiryWarning(expiresAt: string | null, now: number): string | null {
  if (expiresAt === null) return null;
  const at = Date.parse(`${expiresAt}T00:00:00Z`);
  if (!Number.isFinite(at)) return `the run's token reports an unreadable expiry date "${expiresAt}"`;
  if (at <= now) return `the run's token expired on ${expiresAt}`;
  if (at - now < 7 * DAY_MS)
    return `the run's token expires on ${expiresAt}, within 7 days: a long run may stop before it ends`;
  return null;
}

/** Non-terminal moves whose source is one of ours: their repositories are read-only right now. */
async function auditInFlightMoves(
  api: InstanceApi,
  kind: Kind,
  sources: string[],
): Promise<{ moves: MoveRecord[]; complete: boolean }> {
  const found: MoveRecord[] = [];
  let page: number | null = 1;
  for (let n = 0; page !== null && n < AUDIT_PAGES; n += 1) {
    const result = await api.listMoves(kind, page, AUDIT_PER_PAGE);
    for (const m of result.moves) {
      if (!TERMINAL_MOVE_STATES.includes(m.state) && sources.includes(m.sourceStorage)) found.push(m);
    }
    page = result.nextPage;
  }
  return { moves: found, complete: page === null };
}
