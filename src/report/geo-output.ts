/**
 * The Geo step's output as a checkpoint holds it. The machine's type is per secondary site
 * (`GeoOutput`), but a checkpoint written before per-site resync holds `{ results }` from one call
 * to the primary instead, and the reports read old checkpoints too: they take this wider type and
 * ask `isPerSite` before reading `sites`.
 */
import type { GeoOutput } from '../machine/types.js';

/** The Geo step's output in a checkpoint from before per-site resync: one call to the primary. */
export interface PrimaryOnlyGeoOutput {
  results?: { registryClass: string }[];
}

/** The Geo step's output as restored from any checkpoint. */
export type StoredGeoOutput = GeoOutput | PrimaryOnlyGeoOutput;

/** Whether the Geo step's output is per secondary site (not a checkpoint's from before per-site resync). */
export function isPerSite(geo: StoredGeoOutput): geo is GeoOutput {
  return 'sites' in geo && Array.isArray(geo.sites);
}
