/**
 * Step 6, Geo resync: `RESYNC_ALL` for the registries of the kinds that moved, so secondaries fetch
 * the repositories from their new storage. Safe to repeat (a resync is idempotent).
 */
import type { GeoOutput } from '../machine/types.js';
import type { Kind } from '../plan/types.js';
import type { ActorDeps } from './types.js';

const REGISTRIES: Record<Kind, string[]> = {
  projects: ['PROJECT_REPOSITORY_REGISTRY', 'PROJECT_WIKI_REPOSITORY_REGISTRY', 'DESIGN_MANAGEMENT_REPOSITORY_REGISTRY'],
  snippets: ['SNIPPET_REPOSITORY_REGISTRY'],
  groups: ['GROUP_WIKI_REPOSITORY_REGISTRY'],
};

/** The Geo registry classes holding the repositories of these kinds. */
export function registryClassesFor(kinds: readonly Kind[]): string[] {
  return kinds.flatMap((k) => REGISTRIES[k]);
}

/** Asks for a resync of every registry of the moved kinds; per-class errors are returned, not thrown. */
export async function runGeoResync(deps: Pick<ActorDeps, 'api' | 'plan' | 'log'>): Promise<GeoOutput> {
  const classes = registryClassesFor(deps.plan.move.kinds);
  const results = await deps.api.geoResync(classes);
  for (const r of results) {
    if (r.errors.length > 0) deps.log.warn({ registryClass: r.registryClass, errors: r.errors }, 'geo resync refused');
    else deps.log.info({ registryClass: r.registryClass }, 'geo resync requested');
  }
  return { results };
}
