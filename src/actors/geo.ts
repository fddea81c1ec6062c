/**
 * Step 6, Geo resync: `RESYNC_ALL` for the registries of the kinds that moved, so secondaries fetch
 * the repositories from their new storage. Registries live on the secondaries, so the secondaries
 * are discovered (`GET /geo_sites`, or `GET /geo_nodes` before 16.0) and each is asked through the
 * primary's node proxy; a primary's
 * own answer would be "success" with nothing resynced. The result is per site. Safe to repeat (a
 * resync is idempotent). Per-site failures are results, not errors: the machine turns them into
 * warnings, as it always did for refused registry classes.
 */
import { codeOf } from '../shared/errors.js';
import type { GeoOutput, GeoSiteResult } from '../machine/types.js';
import type { Kind } from '../plan/types.js';
import type { ActorDeps } from './types.js';
import { holdForStop, waitForGates } from './write-gate.js';
import type { WeightsStore } from '../store/views.js';

const REGISTRIES: Record<Kind, string[]> = {
  projects: [
    'PROJECT_REPOSITORY_REGISTRY',
    'PROJECT_WIKI_REPOSITORY_REGISTRY',
    'DESIGN_MANAGEMENT_REPOSITORY_REGISTRY',
  ],
  snippets: ['SNIPPET_REPOSITORY_REGISTRY'],
  groups: ['GROUP_WIKI_REPOSITORY_REGISTRY'],
};

/** Errors that end the run however the Geo step would treat them (the token is gone). */
const FATAL_CODES = new Set(['SHARDMOVE_API_UNAUTHORIZED']);

/** The Geo registry classes holding the repositories of these kinds. */
export function registryClassesFor(kinds: readonly Kind[]): string[] {
  return kinds.flatMap((k) => REGISTRIES[k]);
}

/** Asks every enabled Geo secondary for a resync of the moved kinds' registries; per-site outcomes are returned. */
export async function runGeoResync(
  deps: Pick<ActorDeps<WeightsStore>, 'api' | 'plan' | 'log' | 'signal'> &
    Partial<Pick<ActorDeps<WeightsStore>, 'gate' | 'store' | 'clock' | 'dryRun' | 'stopAsked'>>,
): Promise<GeoOutput> {
  const { api, log } = deps;
  const classes = registryClassesFor(deps.plan.move.kinds);
  const all = await api.geoSites();
  if (all === null) {
    log.warn('geo resync: no Geo API on the instance (GET /geo_sites and GET /geo_nodes answered 404)');
    return {
      sites: [],
      warnings: [
        'no Geo secondary: nothing to resync (GET /geo_sites and GET /geo_nodes answered 404: no Geo API, as on the Community Edition)',
      ],
    };
  }
  const listedBy = all[0]?.listedBy === 'geo_nodes' ? 'GET /geo_nodes' : 'GET /geo_sites';
  const secondaries = all.filter((s) => !s.primary);
  const warnings: string[] = [];
  if (secondaries.length === 0) {
    log.warn({ sites: all.length, listedBy }, 'geo resync: no Geo secondary');
    warnings.push(
      `no Geo secondary: nothing to resync (${listedBy} lists ${all.length === 0 ? 'no site' : 'only the primary'})`,
    );
  } else log.info({ secondaries: secondaries.length, listedBy }, 'geo resync: secondaries found');
  const sites: GeoSiteResult[] = [];
  // A resync is a write: it waits for the gates as the moves and the weights do.
  if (secondaries.length > 0 && deps.gate && deps.store && deps.clock) {
    await waitForGates(
      { ...deps, gate: deps.gate, store: deps.store, clock: deps.clock, dryRun: deps.dryRun ?? false },
      'the Geo resync',
    );
  }
  for (const site of secondaries) {
    if (!site.enabled) {
      warnings.push(`Geo site "${site.name}" (id ${site.id}) is disabled: not resynced; resync it once it is enabled`);
      continue;
    }
    // Each site's resync is a write of its own: a stop asked for since the last one keeps it unsent.
    if (deps.clock) await holdForStop({ ...deps, clock: deps.clock, dryRun: deps.dryRun ?? false }, 'the Geo resync');
    try {
      const results = await api.geoResync(site.id, classes);
      // The proxy's `200 {}` for every class: the secondary was never reached, so nothing was requested.
      if (results.length > 0 && results.every((r) => !r.forwarded)) {
        const message =
          'the primary could not reach this secondary: its node proxy answered 200 {} (no geoRegistriesBulkUpdate), nothing was resynced';
        log.warn({ site: site.id }, 'geo resync: secondary not reached through the node proxy');
        sites.push({ siteId: site.id, name: site.name, results: [], error: message });
        continue;
      }
      // A release before the mutation: the secondary's schema has no geoRegistriesBulkUpdate.
      if (results.length > 0 && results.every((r) => r.unsupported === true)) {
        log.warn({ site: site.id }, 'geo resync: the release has no geoRegistriesBulkUpdate');
        sites.push({ siteId: site.id, name: site.name, results: [], error: noBulkUpdateMessage(classes) });
        continue;
      }
      for (const r of results) {
        if (r.errors.length > 0)
          log.warn({ site: site.id, registryClass: r.registryClass, errors: r.errors }, 'geo resync refused');
        else log.info({ site: site.id, registryClass: r.registryClass }, 'geo resync requested');
      }
      sites.push({ siteId: site.id, name: site.name, results, error: null });
    } catch (err) {
      if (deps.signal.aborted || FATAL_CODES.has(codeOf(err) ?? '')) throw err;
      const message = err instanceof Error ? err.message : String(err);
      log.warn({ site: site.id, error: message }, 'geo resync failed on a site');
      sites.push({ siteId: site.id, name: site.name, results: [], error: message });
    }
  }
  return { sites, warnings };
}

/**
 * Why nothing was resynced on a release without `geoRegistriesBulkUpdate` (mounted from 16.4;
 * before 16.1 Geo has no registry mutation at all and no REST resync), and how to do it by hand.
 */
function noBulkUpdateMessage(classes: readonly string[]): string {
  return (
    'this GitLab release has no API to resync Geo registries (geoRegistriesBulkUpdate is GitLab 16.4 and later; ' +
    `GraphQL answered "Field 'geoRegistriesBulkUpdate' doesn't exist"): nothing was resynced for ${classes.join(', ')}. ` +
    'Resync by hand: on the secondary, Admin Area > Geo > Sites > Replication details, "Resync all" for each data type ' +
    '(projects: Admin Area > Geo > Projects); or in a Rails console on the secondary, ' +
    '`Geo::ProjectRegistry.update_all(resync_repository: true, resync_wiki: true)` for projects and their wikis ' +
    '(where projects are on the self-service framework, `Geo::ProjectRepositoryRegistry.update_all(state: 0, last_synced_at: nil)`, ' +
    'and likewise for each other registry class)'
  );
}
