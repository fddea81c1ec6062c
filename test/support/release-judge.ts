/**
 * What the release matrix reads: the truth from the sandbox's records (which items sit where, which
 * moves failed how), and shardmove's four accounts of the same run (the final report on stdout,
 * `status --json`, `report --json`, the metrics file), each reduced to the same few numbers so they
 * can be set side by side. Nothing here imports the orchestrator: the classes a release allows are
 * modelled from the fates the sandbox recorded, not asked of shardmove's classifier.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { ProfileRun, SandboxItem, SandboxMove } from './release-run.js';
import type { ItemKind, Release } from './release-profile.js';
import type { Role } from './release-scenario.js';
import { DESTINATION, SOURCES } from './release-scenario.js';
import { FAILURE_CLASSES } from '../../src/events/failure-class.js';
import { flat } from './cli-harness.js';

/** The plan's name for a kind. */
export const PLURAL: Record<ItemKind, string> = { project: 'projects', snippet: 'snippets', group: 'groups' };

export const keyOf = (kind: string, id: number): string => `${kind.replace(/s$/, '')}:${id}`;

/** Per kind (plural), or per kind and source (`projects@nfs-1`): items moved, of how many, and quarantined. */
export type Tally = Record<string, { moved: number; total: number; quarantined: number }>;

/** The truth, from the sandbox: the planned items (a repository of a planned kind on a source at the start) and where they are. */
export interface Truth {
  planned: SandboxItem[];
  /** Still on a drained source. */
  left: string[];
  tally: Tally;
  /** The same per kind and the source the item started on (`projects@nfs-1`). */
  bySource: Tally;
  /** Copies a move left on a drained source, `kind:id@storage`. */
  staleCopies: string[];
  /** Moves by kind that ended with the repository on the destination, and moves failed or never ending. */
  finished: Record<string, number>;
  failed: Record<string, number>;
}

/** Items (`kind:id`) and moves (ids) a judgement leaves out: a known gap's. */
export interface Skip {
  items: ReadonlySet<string>;
  moves: ReadonlySet<number>;
}

export const NOTHING_SKIPPED: Skip = { items: new Set(), moves: new Set() };

export function truthOf(
  run: ProfileRun,
  roles: readonly Role[],
  ids: ReadonlyMap<string, number>,
  r: Release,
  skip: Skip = NOTHING_SKIPPED,
): Truth {
  const seeded = new Set(roles.map((role) => keyOf(role.kind, ids.get(role.role)!)));
  const planned = run.items.filter(
    (i) =>
      seeded.has(keyOf(i.kind, i.id)) && !skip.items.has(keyOf(i.kind, i.id)) && (i.kind !== 'group' || r.groupWikis),
  );
  const onSource = (i: SandboxItem) => (SOURCES as readonly string[]).includes(i.storage);
  const startedOn = new Map(roles.map((role) => [keyOf(role.kind, ids.get(role.role)!), role.storage]));
  const tally: Tally = {};
  const bySource: Tally = {};
  for (const i of planned) {
    for (const t of [
      (tally[PLURAL[i.kind]] ??= { moved: 0, total: 0, quarantined: 0 }),
      (bySource[`${PLURAL[i.kind]}@${startedOn.get(keyOf(i.kind, i.id))}`] ??= { moved: 0, total: 0, quarantined: 0 }),
    ]) {
      t.total++;
      if (i.storage === DESTINATION) t.moved++;
      if (onSource(i)) t.quarantined++;
    }
  }
  const finished: Record<string, number> = {};
  const failed: Record<string, number> = {};
  for (const m of run.moves) {
    if (skip.moves.has(m.id)) continue;
    const k = PLURAL[m.kind];
    if (m.state === 'finished' || m.state === 'cleanup failed') finished[k] = (finished[k] ?? 0) + 1;
    else failed[k] = (failed[k] ?? 0) + 1;
  }
  return {
    planned,
    left: planned.filter(onSource).map((i) => keyOf(i.kind, i.id)),
    tally,
    bySource,
    staleCopies: planned.flatMap((i) => i.stale_copies.map((s) => `${keyOf(i.kind, i.id)}@${s}`)),
    finished,
    failed,
  };
}

/**
 * The class a failed or never-ending move has on release `r`, from the fate the sandbox gave it:
 * what GitLab records about it (a move out of room is the one no-space of the drain, and the
 * destination's free space confirms it; a move failed without a message was failed by a lease).
 * Before 16.7 no move records a reason: every failed move is unknown.
 */
export function moveClass(m: SandboxMove, r: Release, noSpaceConfirmed: boolean): string {
  if (m.state === 'scheduled') return 'stuck-queued';
  if (m.state === 'started' || m.state === 'replicated') return 'stuck-running';
  if (!r.messages) return 'unknown';
  const byFate: Record<string, string> = {
    fail: 'checksum',
    tar_cut_short: 'tar-failed',
    deadline_exceeded: 'timeout',
    unavailable: 'gitaly-unavailable',
    source_missing: 'source-missing',
    no_space: noSpaceConfirmed ? 'no-space' : 'tar-failed',
    interrupted: 'lease-held',
    read_only_left: 'lease-held',
  };
  const cls = byFate[m.fate];
  if (!cls)
    throw new Error(`move ${m.kind}:${m.id} ended ${m.state} with fate ${m.fate}, which the matrix does not expect`);
  return cls;
}

/** The final report as printed: headline, the per-kind lines, the quarantined items with their class, copies left behind. */
export interface PrintedReport {
  headline: string;
  tally: Tally;
  quarantined: Map<string, { source: string; class: string }>;
  copies: string[];
  verification: string;
  /** Kinds verified by move records: per `kind@source`, moved and quarantined as the line says. */
  byRecords: Record<string, { moved: number; quarantined: number }>;
}

/**
 * The report is wrapped at 80 columns in a pipe: a line's rest continues on the lines below it,
 * indented. Each item is read from its first line (its head stays there), the class from the first
 * line below it that names a class, and the sentences that wrap from the text with the indented
 * lines joined (flat).
 */
export function parseStdout(stdout: string): PrintedReport {
  const lines = stdout.split('\n');
  const joined = flat(stdout);
  const tally: Tally = {};
  for (const l of lines) {
    const m = /^ {2}(projects|snippets|groups): (\d+) moved of (\d+), (\d+) quarantined$/.exec(l);
    if (m) tally[m[1]!] = { moved: Number(m[2]), total: Number(m[3]), quarantined: Number(m[4]) };
  }
  const quarantined = new Map<string, { source: string; class: string }>();
  const classes = new Set<string>(FAILURE_CLASSES);
  const head = /^ {2}(projects|snippets|groups) (\d+) \S+ on (\S+) after /;
  lines.forEach((l, i) => {
    const m = head.exec(l);
    if (!m) return;
    // The class line: the first below it that starts with a class, before the next item.
    for (const next of lines.slice(i + 1)) {
      if (head.test(next) || !next.startsWith('    ')) break;
      const cls = /^ {4}([a-z-]+): /.exec(next);
      if (cls && classes.has(cls[1]!)) {
        quarantined.set(keyOf(m[1]!, Number(m[2])), { source: m[3]!, class: cls[1]! });
        break;
      }
    }
  });
  const copies = lines
    .map((l) => /^ {2}(projects|snippets|groups) (\d+) \S+: copy left on (\S+)(?: |$)/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => `${keyOf(m[1]!, Number(m[2]))}@${m[3]}`);
  const byRecords: PrintedReport['byRecords'] = {};
  for (const m of joined.matchAll(
    /(?:^|\n| )(projects|snippets|groups) on (\S+): verified by move records.*? \((\d+) moved, (\d+) quarantined\)/g,
  ))
    byRecords[`${m[1]}@${m[2]}`] = { moved: Number(m[3]), quarantined: Number(m[4]) };
  return {
    byRecords,
    // Without a terminal, progress lines come first (one per interval), then the report.
    headline: lines.find((l) => /^[A-Z]{4}/.test(l)) ?? '',
    tally,
    quarantined,
    copies,
    verification: verificationLine(lines),
  };
}

/** The Verification line with its continuations (hung under the text after `Verification: `), as one line. */
function verificationLine(lines: readonly string[]): string {
  const at = lines.findIndex((l) => l.startsWith('Verification: '));
  if (at < 0) return '';
  const out = [lines[at]!];
  for (const l of lines.slice(at + 1)) {
    if (!/^ {14}\S/.test(l)) break;
    out.push(l.trim());
  }
  return out.join(' ');
}

/** The metrics file, summed the way the truth is counted. */
export interface ReadMetrics {
  /** shardmove_items by kind and state. */
  items: Record<string, Record<string, number>>;
  /** shardmove_items as rows. */
  itemRows: CountRow[];
  finished: Record<string, number>;
  failed: Record<string, number>;
  /** shardmove_moves_failed_total by class, every kind together. */
  failedByClass: Record<string, number>;
  outcome: string | undefined;
  step: string | undefined;
}

export function readMetrics(text: string): ReadMetrics {
  const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f.metrics]));
  const out: ReadMetrics = {
    items: {},
    itemRows: [],
    finished: {},
    failed: {},
    failedByClass: {},
    outcome: undefined,
    step: undefined,
  };
  const add = (to: Record<string, number>, key: string, v: number) => (to[key] = (to[key] ?? 0) + v);
  for (const s of families.get('shardmove_items') ?? []) {
    const l = s.labels ?? {};
    add((out.items[l.kind!] ??= {}), l.state!, Number(s.value));
    out.itemRows.push({ kind: l.kind!, source: l.storage!, state: l.state!, n: Number(s.value) });
  }
  for (const s of families.get('shardmove_moves_finished_total') ?? [])
    add(out.finished, s.labels!.kind!, Number(s.value));
  for (const s of families.get('shardmove_moves_failed_total') ?? []) {
    add(out.failed, s.labels!.kind!, Number(s.value));
    add(out.failedByClass, s.labels!.class!, Number(s.value));
  }
  out.outcome = families.get('shardmove_run_end_timestamp_seconds')?.[0]?.labels?.outcome;
  out.step = families.get('shardmove_run_info')?.[0]?.labels?.step;
  return out;
}

/**
 * A reported tally without the skipped items, each taken off as it was reported: quarantined when
 * `quarantined` (that account's quarantined items) has it, moved otherwise. `rowOf` names an item's
 * row (by default its kind).
 */
export function tallyWithout(
  tally: Tally,
  quarantined: ReadonlySet<string>,
  skip: Skip,
  rowOf: (item: string) => string = (item) => PLURAL[item.split(':')[0] as ItemKind],
): Tally {
  const out: Tally = structuredClone(tally);
  for (const key of skip.items) {
    const t = out[rowOf(key)];
    if (!t) continue;
    t.total--;
    if (quarantined.has(key)) t.quarantined--;
    else t.moved--;
  }
  return out;
}

/** Items of a kind on a source in a state, as `status --json` counts them and the metrics label them. */
export interface CountRow {
  kind: string;
  source: string;
  state: string;
  n: number;
}

/** Count rows as a tally per `kind@source` (or per source alone with `bySourceOnly`). */
export function tallyOfRows(rows: readonly CountRow[], bySourceOnly = false): Tally {
  const out: Tally = {};
  for (const r of rows) {
    const t = (out[bySourceOnly ? r.source : `${r.kind}@${r.source}`] ??= { moved: 0, total: 0, quarantined: 0 });
    t.total += r.n;
    if (r.state === 'moved') t.moved += r.n;
    if (r.state === 'quarantined') t.quarantined += r.n;
  }
  return Object.fromEntries(Object.entries(out).filter(([, t]) => t.total > 0));
}

/** A per-`kind@source` tally summed per source. */
export function perSource(t: Tally): Tally {
  const out: Tally = {};
  for (const [key, v] of Object.entries(t)) {
    const s = (out[key.split('@')[1]!] ??= { moved: 0, total: 0, quarantined: 0 });
    s.moved += v.moved;
    s.total += v.total;
    s.quarantined += v.quarantined;
  }
  return out;
}

/** Counts of `values`, by value. */
export function countBy(values: Iterable<string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
