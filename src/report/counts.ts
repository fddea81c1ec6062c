/**
 * The one count of a run's items, from the checkpoint's summary: every output that says how many
 * items were placed, moved, are still to move or stay where they are (the dry run, the progress
 * line, the final summary, `status`, the report and the metrics file) reads it from here, so that
 * their numbers agree. Pure.
 *
 * Every item the run knows is in exactly one of: done (moved, or gone from the source by other
 * means), in flight, waiting (still to move, retries included), quarantined, or staying. An item
 * stays when its source's `move.until` bound is reached and no move was ever placed for it, or when
 * `move.select` does not choose it (`notSelected`, a part of staying): the plan asked to leave it
 * where it is, so it is neither remaining work nor a failure. Before the bound is reached nothing is
 * known to stay by it, and every pending item counts as waiting.
 */
import type { Kind } from '../plan/types.js';
import type { StatusSummary } from '../store/types.js';

/** What the count reads of the summary. */
export type CountInput = Pick<StatusSummary, 'counts' | 'retrying' | 'staying' | 'boundsReached' | 'listRun'>;

export interface KindProgress {
  kind: Kind;
  total: number;
  /** Moved, or gone from the source by other means. */
  done: number;
  inFlight: number;
  /** Still to move: not started yet, or waiting for a retry after a failed attempt. */
  waiting: number;
  /** Of `waiting`: those whose last attempt failed and that wait for their retry. */
  retrying: number;
  quarantined: number;
  /** Left on the source as planned: a reached `move.until` bound, never placed, or not selected. */
  staying: number;
  /** Of `staying`: those `move.select` does not choose. */
  notSelected: number;
  /**
   * A reviewed list's run (`run --only`): listed items no longer where the list says (moved by
   * someone else, deleted). Not moved by the run, and no work left: neither `done` nor `waiting`.
   * Always 0 in other runs, where an item gone from the source by other means is `done`.
   */
  skipped: number;
}

/** One (kind, source): the dry run's lines and the report's storage table. */
export interface SourceProgress extends KindProgress {
  source: string;
}

export interface RunCounts {
  /** Items the run knows (enumerated on its sources). */
  total: number;
  done: number;
  inFlight: number;
  waiting: number;
  quarantined: number;
  staying: number;
  /** Of `staying`: not chosen by `move.select`. */
  notSelected: number;
  /** A reviewed list's items no longer where the list says (see KindProgress). */
  skipped: number;
  /** The run's scope: every item it moves or tried to move (`total - staying`). */
  planned: number;
  /** Still to move: `waiting + inFlight`. What the rate, the ETA and `items_remaining` count. */
  remaining: number;
  /** Sources whose `move.until` bound is reached. */
  boundsReached: string[];
  /** Per kind, in the order kinds first appear in the summary. */
  kinds: KindProgress[];
  /** Per kind and source, in the summary's order. */
  sources: SourceProgress[];
}

const DONE = new Set(['moved', 'left']);
const IN_FLIGHT = new Set(['scheduling', 'in_flight']);

function empty(kind: Kind): KindProgress {
  return {
    kind,
    total: 0,
    done: 0,
    inFlight: 0,
    waiting: 0,
    retrying: 0,
    quarantined: 0,
    staying: 0,
    notSelected: 0,
    skipped: 0,
  };
}

function add(to: KindProgress, from: KindProgress): void {
  to.total += from.total;
  to.done += from.done;
  to.inFlight += from.inFlight;
  to.waiting += from.waiting;
  to.retrying += from.retrying;
  to.quarantined += from.quarantined;
  to.staying += from.staying;
  to.notSelected += from.notSelected;
  to.skipped += from.skipped;
}

/** The count, per (kind, source), per kind and in all. */
export function countItems(summary: CountInput): RunCounts {
  const bySource = new Map<string, SourceProgress>();
  const at = (kind: Kind, source: string) => {
    const key = `${kind}\u0000${source}`;
    let p = bySource.get(key);
    if (!p) bySource.set(key, (p = { ...empty(kind), source }));
    return p;
  };
  for (const c of summary.counts) {
    const p = at(c.kind, c.source);
    p.total += c.n;
    // A reviewed list's run knows only its items: one no longer where the list says was not moved.
    if (summary.listRun && c.state === 'left') p.skipped += c.n;
    else if (DONE.has(c.state)) p.done += c.n;
    else if (IN_FLIGHT.has(c.state)) p.inFlight += c.n;
    else if (c.state === 'quarantined') p.quarantined += c.n;
    else if (c.state === 'unselected') {
      p.staying += c.n;
      p.notSelected += c.n;
    } else p.waiting += c.n;
  }
  for (const r of summary.retrying ?? []) {
    const p = bySource.get(`${r.kind}\u0000${r.source}`);
    if (p) p.retrying += r.n;
  }
  // Never placed, so never retried: staying comes out of waiting, not out of retrying.
  for (const s of summary.staying ?? []) {
    const p = bySource.get(`${s.kind}\u0000${s.source}`);
    if (!p) continue;
    const n = Math.min(s.n, p.waiting - p.retrying);
    p.staying += n;
    p.waiting -= n;
  }
  const sources = [...bySource.values()];
  const byKind = new Map<Kind, KindProgress>();
  for (const s of sources) {
    let k = byKind.get(s.kind);
    if (!k) byKind.set(s.kind, (k = empty(s.kind)));
    add(k, s);
  }
  const all = empty('projects');
  for (const s of sources) add(all, s);
  return {
    total: all.total,
    done: all.done,
    inFlight: all.inFlight,
    waiting: all.waiting,
    quarantined: all.quarantined,
    staying: all.staying,
    notSelected: all.notSelected,
    skipped: all.skipped,
    planned: all.total - all.staying,
    remaining: all.waiting + all.inFlight,
    boundsReached: [...(summary.boundsReached ?? [])],
    kinds: [...byKind.values()],
    sources,
  };
}

/** Per-kind totals, in the order kinds first appear. */
export function progressByKind(summary: CountInput): KindProgress[] {
  return countItems(summary).kinds;
}

/** "nfs-1", "nfs-1 and nfs-2", "nfs-1, nfs-2 and nfs-3". */
export function listWords(names: readonly string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/**
 * What a partial drain did, in the words of a headline: "moved 26 of 167 as planned: move.until
 * reached on nfs-1", "moved 26 of 167 as planned: 141 not selected"; null when nothing stays (every
 * item was in the run's scope).
 */
export function partialOutcome(
  c: Pick<RunCounts, 'done' | 'total' | 'staying' | 'boundsReached' | 'sources'> & { notSelected?: number },
  moved = 'moved',
): string | null {
  if (c.staying === 0) return null;
  const notSelected = c.notSelected ?? 0;
  const why: string[] = [];
  if (c.staying > notSelected) {
    const bounded = c.boundsReached.length > 0 ? c.boundsReached : stayingSources(c);
    why.push(`move.until reached on ${listWords(bounded)}`);
  }
  if (notSelected > 0) why.push(`${notSelected} not selected`);
  return `${moved} ${c.done} of ${c.total} as planned: ${why.join(', ')}`;
}

/** Why items stay, in brackets' words: "move.until", "not selected", "move.until; 120 not selected". */
export function stayingWhy(c: { staying: number; notSelected?: number }): string {
  const notSelected = c.notSelected ?? 0;
  if (notSelected === 0) return 'move.until';
  if (notSelected >= c.staying) return 'not selected';
  return `move.until; ${notSelected} not selected`;
}

/** The sources items stay on, in the summary's order. */
export function stayingSources(c: Pick<RunCounts, 'sources'>): string[] {
  return [...new Set(c.sources.filter((s) => s.staying > 0).map((s) => s.source))];
}

/** "141 stay on nfs-1 as planned (move.until)", "(not selected)", or null when none stays. */
export function stayingWords(c: Pick<RunCounts, 'staying' | 'sources'> & { notSelected?: number }): string | null {
  if (c.staying === 0) return null;
  return `${c.staying} stay on ${listWords(stayingSources(c))} as planned (${stayingWhy(c)})`;
}

/**
 * What the run of a reviewed list (`run --only FILE`) did, in a headline's words: it knows only the
 * list's items, so "every" is theirs, and those no longer where the list says (moved by someone
 * else, deleted) are not said to have moved.
 */
export function listOutcome(file: string, counts: readonly { state: string; n: number }[]): string {
  let total = 0;
  let left = 0;
  let out = 0;
  for (const c of counts) {
    total += c.n;
    if (c.state === 'left') left += c.n;
    else if (c.state === 'unselected') out += c.n;
  }
  if (left + out === 0) return `every item of the list ${file} moved`;
  const why = [
    ...(left > 0 ? [`${left} no longer where it says`] : []),
    ...(out > 0 ? [`${out} left the selection`] : []),
  ];
  return `${total - left - out} of the ${total} items of the list ${file} moved (${why.join(', ')})`;
}

/** "4 not moved (no longer where the list says)", or null when none was skipped. */
export function skippedWords(c: { skipped: number }): string | null {
  return c.skipped > 0 ? `${c.skipped} not moved (no longer where the list says)` : null;
}
