/**
 * /-/health, /-/liveness, /-/readiness (reference §4). No credentials; exempt from faults.
 *
 * `?all=1` (any value: GitLab only tests presence) adds db, Redis and one `gitaly_check` entry per
 * configured storage; storages listed in the seed's `unreachable` fail. The top-level status is
 * `ok` (HTTP 200) when every check name has at least one passing probe, else `failed` (503): one
 * bad storage among healthy ones still reports ok, exactly the caveat the reference warns about.
 */
import type { RequestContext, Reply } from '../http/context.js';
import type { Router } from '../http/router.js';

/** Adds the health probes (no credentials). */
export function register(router: Router): void {
  router.get('/-/health', { level: 'none' }, () => ({ text: 'GitLab OK' }));
  router.get('/-/liveness', { level: 'none' }, () => ({ body: { status: 'ok' } }));
  router.get('/-/readiness', { level: 'none' }, readiness);
}

interface Probe {
  status: 'ok' | 'failed';
  message?: string;
  labels?: Record<string, string>;
}

const REDIS_CHECKS = ['redis_check', 'cache_check', 'queues_check', 'shared_state_check', 'sessions_check'];

/** The probes of the readiness check, by check name. */
export function readinessProbes(ctx: Pick<RequestContext, 'state'>, all: boolean): Record<string, Probe[]> {
  const checks: Record<string, Probe[]> = { master_check: [{ status: 'ok' }] };
  if (!all) return checks;
  checks.db_check = [{ status: 'ok' }];
  for (const name of REDIS_CHECKS) checks[name] = [{ status: 'ok' }];
  const { storages, unreachable } = ctx.state.config;
  checks.gitaly_check = storages.map((shard): Probe => unreachable.includes(shard)
    ? { status: 'failed', message: `14:failed to connect to all addresses; last error: UNAVAILABLE: gitaly for storage "${shard}": Connection refused`, labels: { shard } }
    : { status: 'ok', labels: { shard } });
  return checks;
}

function readiness(ctx: RequestContext): Reply {
  const checks = readinessProbes(ctx, ctx.query.has('all'));
  const ok = Object.values(checks).every((probes) => probes.some((p) => p.status === 'ok'));
  return { status: ok ? 200 : 503, body: { status: ok ? 'ok' : 'failed', ...checks } };
}
