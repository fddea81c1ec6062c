/**
 * What people read of the checkpoint's summary: durations, bytes, the placement and the copies left
 * behind; the count of items (per kind done / in flight / waiting / quarantined / staying; the rate and
 * the ETA are ./pace.ts's) is ./counts.ts's, re-exported here. Pure: the caller passes the time.
 */
import type { DestinationPlacement } from '../store/types.js';

// The count lives in ./counts.ts; these names stay here for the renderers that import them.
export { progressByKind } from './counts.js';
export type { KindProgress } from './counts.js';

/**
 * A duration for people to read, rounded to its two largest units: 95s -> "1m35s", 2h -> "2h00m",
 * null -> "unknown". Lossy, for elapsed times and ETAs; plans write exact ones (formatPlanDuration).
 */
export function formatApproxDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return 'unknown';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}

/** Bytes in a short human form. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

/**
 * Where the items go among the destinations, as lines for people: items and bytes per destination, and how many
 * have arrived. Nothing when the checkpoint placed nothing per item (one destination, older files).
 */
export function placementLines(placement: readonly DestinationPlacement[] | undefined, dryRun: boolean): string[] {
  if (!placement || placement.length === 0) return [];
  const w = Math.max(...placement.map((p) => p.destination.length));
  return [
    '',
    dryRun ? 'Placement (what the run would send where):' : 'Placement (chosen per item, recorded before its move):',
    ...placement.map((p) => {
      const sized = p.unsized > 0 ? ` (+${p.unsized} without a size)` : '';
      return `  ${p.destination.padEnd(w)}  ${String(p.items).padStart(6)} item(s)  ${formatBytes(p.bytes).padStart(9)}${sized}${dryRun ? '' : `  ${p.moved} moved`}`;
    }),
  ];
}
