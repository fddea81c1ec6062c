/**
 * Turns the checkpoint's raw counts (kind x source x item state) into what people read: per kind
 * done / in flight / waiting / quarantined, a rate and an ETA. Pure: the caller passes the time.
 */
import type { Kind } from '../plan/types.js';
import type { DestinationPlacement, StatusSummary } from '../store/types.js';

export interface KindProgress {
  kind: Kind;
  total: number;
  /** Moved, or gone from the source by other means. */
  done: number;
  inFlight: number;
  /** Not started yet, or waiting for a retry after a failed attempt. */
  waiting: number;
  /** Of `waiting`: those whose last attempt failed and that wait for their retry. */
  retrying: number;
  quarantined: number;
}

const DONE = new Set(['moved', 'left']);
const IN_FLIGHT = new Set(['scheduling', 'in_flight']);

/** Per-kind totals, in the order kinds first appear. */
export function progressByKind(summary: Pick<StatusSummary, 'counts' | 'retrying'>): KindProgress[] {
  const byKind = new Map<Kind, KindProgress>();
  for (const c of summary.counts) {
    let p = byKind.get(c.kind);
    if (!p) {
      p = { kind: c.kind, total: 0, done: 0, inFlight: 0, waiting: 0, retrying: 0, quarantined: 0 };
      byKind.set(c.kind, p);
    }
    p.total += c.n;
    if (DONE.has(c.state)) p.done += c.n;
    else if (IN_FLIGHT.has(c.state)) p.inFlight += c.n;
    else if (c.state === 'quarantined') p.quarantined += c.n;
    else p.waiting += c.n;
  }
  for (const r of summary.retrying ?? []) {
    const p = byKind.get(r.kind);
    if (p) p.retrying += r.n;
  }
  return [...byKind.values()];
}

export interface Rate {
  /** Moves per minute over the window. */
  perMinute: number;
  /** Milliseconds until the remaining items are done at that rate, or null when unknown. */
  etaMs: number | null;
  remaining: number;
}

/**
 * Rate over the last 10 minutes (or over `elapsedMs` when the run is younger), and the ETA for the
 * items neither done nor quarantined.
 */
export function rateAndEta(
  summary: Pick<StatusSummary, 'counts' | 'movedLast10Min' | 'retrying'>,
  elapsedMs?: number,
): Rate {
  const windowMin = Math.max(1 / 60, Math.min(10, (elapsedMs ?? 600_000) / 60_000));
  const perMinute = summary.movedLast10Min / windowMin;
  const remaining = progressByKind(summary).reduce((a, p) => a + p.waiting + p.inFlight, 0);
  const etaMs = remaining === 0 ? 0 : perMinute > 0 ? (remaining / perMinute) * 60_000 : null;
  return { perMinute, etaMs, remaining };
}

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
 * Where the items go (issue 23), as lines for people: items and bytes per destination, and how many
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
