/**
 * Step 2, check storages: every source and the destination must be configured and healthy. Reads
 * each `gitaly_check` entry of `/-/readiness?all=1`, never only the top-level status, which stays
 * "ok" while any one storage answers.
 */
import type { Readiness } from '../api/types.js';
import type { StoragesOutput } from '../machine/types.js';
import type { ActorDeps } from './types.js';
import { READINESS_REFUSED, STORAGE_UNHEALTHY, STORAGE_UNKNOWN, StepError } from './errors.js';

/** Checks the plan's storages; throws a StepError naming every unknown or unhealthy one. */
export async function runStorageCheck(deps: Pick<ActorDeps, 'api' | 'plan' | 'log'>): Promise<StoragesOutput> {
  const { plan, log } = deps;
  const readiness = await readReadiness(deps);
  const warnings: string[] = [];
  const wanted = [...plan.move.from, ...plan.move.to];
  if (readiness.gitaly.length === 0) {
    throw new StepError(
      STORAGE_UNKNOWN,
      'the readiness check reported no Gitaly storages (is this client allowed to read /-/readiness?all=1?)',
    );
  }
  const known = new Map(readiness.gitaly.map((g) => [g.storage, g]));
  const unknown = wanted.filter((s) => !known.has(s));
  if (unknown.length > 0) {
    throw new StepError(
      STORAGE_UNKNOWN,
      `storage${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => `"${s}"`).join(', ')} not configured on the instance (configured: ${[...known.keys()].join(', ')})`,
    );
  }
  const unhealthy = wanted.map((s) => known.get(s)).filter((g) => g !== undefined && !g.ok);
  if (unhealthy.length > 0) {
    throw new StepError(
      STORAGE_UNHEALTHY,
      `unhealthy storage${unhealthy.length > 1 ? 's' : ''}: ${unhealthy.map((g) => `"${g?.storage}"${g?.message ? ` (${g.message})` : ''}`).join(', ')}`,
    );
  }
  const others = readiness.gitaly.filter((g) => !g.ok && !wanted.includes(g.storage));
  if (others.length > 0)
    warnings.push(`storages outside the plan are unhealthy: ${others.map((g) => g.storage).join(', ')}`);
  if (readiness.status !== 'ok') warnings.push(`the instance's readiness status is "${readiness.status}"`);
  log.info({ storages: wanted }, 'storages healthy');
  return { warnings };
}

/**
 * GitLab answers `/-/readiness` only to clients on its monitoring IP allowlist (default 127.0.0.0/8
 * and ::1/128) and gives everyone else a 404 page: a bare "HTTP 404" would send the operator
 * looking for a wrong URL, so the 404 is explained.
 */
async function readReadiness(deps: Pick<ActorDeps, 'api'>): Promise<Readiness> {
  try {
    return await deps.api.readiness();
  } catch (err) {
    const e = (err ?? {}) as { code?: unknown; status?: unknown };
    if (e.code !== 'SHARDMOVE_API_NOT_FOUND' && e.status !== 404) throw err;
    throw new StepError(
      READINESS_REFUSED,
      'GET /-/readiness?all=1 answered 404: GitLab answers its health checks only to clients on the monitoring IP allowlist ' +
        "(gitlab_rails['monitoring_whitelist'] in /etc/gitlab/gitlab.rb, monitoring.ip_whitelist in gitlab.yml; default 127.0.0.0/8 and ::1/128), " +
        'and this host is not on it. The storage step reads this check to confirm that every source and the destination is configured ' +
        "and its Gitaly is healthy. Run shardmove from an allowed address, or add this host's address to the allowlist (then reconfigure GitLab), and run again",
    );
  }
}
