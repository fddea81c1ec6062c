/**
 * /-/health, /-/liveness, /-/readiness (reference §4). No credentials; exempt from faults.
 *
 * Only clients on the monitoring IP allowlist (`instance.monitoring_allowlist`, default
 * `127.0.0.0/8` and `::1/128`, GitLab's `monitoring.ip_whitelist`) are answered. IPv4 entries also
 * match IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`, what Node reports on a dual-stack socket),
 * as GitLab's `compat_ip_allowlist` adds them. Everyone else gets a 404: GitLab's HTML not-found
 * page for readiness and liveness (HealthController's `render_404`), an empty `text/plain` body
 * for /-/health (the BasicHealthCheck middleware). The deprecated health-check access token
 * (`?token=`) is not modelled. The client address is the socket's peer: proxies' forwarding
 * headers are not trusted.
 *
 * `?all=1` (any value: GitLab only tests presence) adds db, Redis and one `gitaly_check` entry per
 * configured storage; storages listed in the seed's `unreachable` fail. The top-level status is
 * `ok` (HTTP 200) when every check name has at least one passing probe, else `failed` (503): one
 * bad storage among healthy ones still reports ok, exactly the caveat the reference warns about.
 */
import { BlockList, isIPv4 } from 'node:net';
import type { RequestContext, Reply } from '../http/context.js';
import type { Router } from '../http/router.js';
import type { InstanceConfig } from '../seed-schema.js';
import { DEFAULT_MONITORING_ALLOWLIST, parseCidr } from '../seed-schema.js';

/** Adds the health probes (no credentials; the monitoring allowlist decides). */
export function register(router: Router): void {
  router.get('/-/health', { level: 'none' }, (ctx) =>
    isMonitoringClient(ctx) ? { text: 'GitLab OK' } : { status: 404, text: '' },
  );
  router.get('/-/liveness', { level: 'none' }, (ctx) =>
    isMonitoringClient(ctx) ? { body: { status: 'ok' } } : NOT_FOUND_PAGE,
  );
  router.get('/-/readiness', { level: 'none' }, (ctx) => (isMonitoringClient(ctx) ? readiness(ctx) : NOT_FOUND_PAGE));
}

/** GitLab's `errors/not_found` page, in short: what a client off the allowlist gets from the probes. */
export const NOT_FOUND_PAGE: Reply = {
  status: 404,
  headers: { 'content-type': 'text/html; charset=utf-8' },
  text: [
    '<!DOCTYPE html>',
    '<html>',
    '<head>',
    '<meta content="width=device-width, initial-scale=1, maximum-scale=1" name="viewport">',
    '<title>Not Found</title>',
    '</head>',
    '<body>',
    '<h1>404</h1>',
    '<h3>Page not found</h3>',
    "<p>Make sure the address is correct and the page hasn't moved.</p>",
    '</body>',
    '</html>',
    '',
  ].join('\n'),
};

const allowlists = new WeakMap<InstanceConfig, BlockList>();

/** The allowlist of `config` as a BlockList (built once per configuration). */
export function monitoringAllowlist(config: InstanceConfig): BlockList {
  let list = allowlists.get(config);
  if (list) return list;
  list = new BlockList();
  for (const entry of config.monitoring_allowlist ?? DEFAULT_MONITORING_ALLOWLIST) {
    const cidr = parseCidr(entry);
    // The seed schema validated every entry; one that still does not parse allows nobody.
    if (!cidr) continue;
    list.addSubnet(cidr.address, cidr.prefix, cidr.family);
  }
  allowlists.set(config, list);
  return list;
}

/** Whether `address` (as Node reports it) is on the allowlist; IPv4-mapped IPv6 matches IPv4 entries. */
export function isAllowlisted(list: BlockList, address: string | undefined): boolean {
  if (address === undefined || address === '') return false;
  // BlockList compares `::ffff:a.b.c.d` with IPv4 subnets itself; a zone index (`fe80::1%eth0`) it does not parse.
  const bare = address.split('%')[0] as string;
  try {
    return list.check(bare, isIPv4(bare) ? 'ipv4' : 'ipv6');
  } catch {
    return false;
  }
}

/** Whether the request comes from a client on the monitoring allowlist (the socket's peer address). */
export function isMonitoringClient(ctx: RequestContext): boolean {
  return isAllowlisted(monitoringAllowlist(ctx.state.config), ctx.remoteAddress);
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
  checks.gitaly_check = storages.map((shard): Probe =>
    unreachable.includes(shard)
      ? {
          status: 'failed',
          message: `14:failed to connect to all addresses; last error: UNAVAILABLE: gitaly for storage "${shard}": Connection refused`,
          labels: { shard },
        }
      : { status: 'ok', labels: { shard } },
  );
  return checks;
}

function readiness(ctx: RequestContext): Reply {
  const checks = readinessProbes(ctx, ctx.query.has('all'));
  const ok = Object.values(checks).every((probes) => probes.some((p) => p.status === 'ok'));
  return { status: ok ? 200 : 503, body: { status: ok ? 'ok' : 'failed', ...checks } };
}
