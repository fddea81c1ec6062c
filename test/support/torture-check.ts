/**
 * The torture's verdict, from records the orchestrator cannot have bent: the sandbox's own SQLite
 * file (items, moves, commits), read after it stopped, and the run's checkpoint only for the
 * reasons of quarantined items.
 *
 * - every item is on the destination, or quarantined in the checkpoint with a reason;
 * - no item ever had two moves in flight: per item, each move's [created, terminal] interval ends
 *   before the next one starts (a move never terminal, a stuck one, extends to the end of time);
 * - no move was scheduled for an item already on the destination (its source is the destination);
 * - no accepted commit was lost: its marker is in the commits table, and the item's commit count
 *   and checksum account for every commit of the torture that landed.
 */
import Database from 'better-sqlite3';
import { fakeChecksum } from '../../src/sandbox/checksum.js';
import type { CommitLedger, Kind } from './torture-commits.js';

const TERMINAL = new Set(['finished', 'failed', 'cleanup failed']);
const PLURAL: Record<Kind, string> = { project: 'projects', snippet: 'snippets', group: 'groups' };

export interface Verdict {
  items: number;
  onDestination: number;
  quarantined: { kind: Kind; id: number; reason: string }[];
  /** Items neither on the destination nor quarantined with a reason. */
  lost: string[];
  /** Pairs of moves of one item whose in-flight intervals overlap. */
  duplicates: string[];
  /** Moves whose item was already on the destination. */
  movesOnDestination: string[];
  /** Accepted commits missing, and items whose count or checksum disagrees. */
  commitsLost: string[];
  commitsAccepted: number;
  commitsAmbiguousLanded: number;
  moves: number;
  /** Move fates as the sandbox decided them when each move was created. */
  fates: Record<string, number>;
}

interface MoveRow {
  id: number;
  kind: Kind;
  item_id: number;
  state: string;
  source: string;
  fate: string;
  created_at: string;
  updated_at: string;
}

/** Commit counts per `kind:id`, read before the torture writes anything. */
export function readCommitCounts(sandboxDb: string): Map<string, number> {
  const db = new Database(sandboxDb, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT kind, id, commit_count FROM items').all() as {
      kind: Kind;
      id: number;
      commit_count: number;
    }[];
    return new Map(rows.map((r) => [`${r.kind}:${r.id}`, r.commit_count]));
  } finally {
    db.close();
  }
}

/** Item ids per kind and storage, as the sandbox holds them now. */
export function readItems(sandboxDb: string): { kind: Kind; id: number; storage: string }[] {
  const db = new Database(sandboxDb, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT kind, id, storage FROM items ORDER BY kind, id').all() as {
      kind: Kind;
      id: number;
      storage: string;
    }[];
  } finally {
    db.close();
  }
}

/** Overlapping in-flight intervals and moves from the destination, per item, in id order. */
export function moveViolations(
  moves: readonly MoveRow[],
  destination: string,
): { duplicates: string[]; onDestination: string[] } {
  const duplicates: string[] = [];
  const onDestination: string[] = [];
  const byItem = new Map<string, MoveRow[]>();
  for (const m of moves) {
    if (m.source === destination)
      onDestination.push(`${m.kind} ${m.item_id}: move ${m.id} scheduled while already on ${destination}`);
    const key = `${m.kind}:${m.item_id}`;
    const list = byItem.get(key) ?? [];
    list.push(m);
    byItem.set(key, list);
  }
  for (const [key, list] of byItem) {
    list.sort((a, b) => a.id - b.id);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1] as MoveRow;
      const next = list[i] as MoveRow;
      const prevEnd = TERMINAL.has(prev.state) ? Date.parse(prev.updated_at) : Number.POSITIVE_INFINITY;
      if (Date.parse(next.created_at) < prevEnd) {
        duplicates.push(
          `${key}: move ${next.id} created ${next.created_at} while move ${prev.id} was ${TERMINAL.has(prev.state) ? `in flight until ${prev.updated_at}` : `still ${prev.state}`}`,
        );
      }
    }
  }
  return { duplicates, onDestination };
}

/** Judges the end state. Both files must be closed by their writers (sandbox stopped, run ended). */
export function judge(opts: {
  sandboxDb: string;
  checkpoint: string;
  destination: string;
  initialCommits: Map<string, number>;
  ledger: CommitLedger;
}): Verdict {
  const db = new Database(opts.sandboxDb, { readonly: true, fileMustExist: true });
  const cp = new Database(opts.checkpoint, { readonly: true, fileMustExist: true });
  try {
    const items = db.prepare('SELECT kind, id, storage, commit_count, checksum FROM items').all() as {
      kind: Kind;
      id: number;
      storage: string;
      commit_count: number;
      checksum: string;
    }[];
    const moves = db
      .prepare('SELECT id, kind, item_id, state, source, fate, created_at, updated_at FROM moves')
      .all() as MoveRow[];
    const quarantineRows = cp.prepare("SELECT kind, id, last_error FROM items WHERE state = 'quarantined'").all() as {
      kind: string;
      id: number;
      last_error: string | null;
    }[];
    const reasons = new Map(quarantineRows.map((r) => [`${r.kind}:${r.id}`, r.last_error ?? '']));

    const quarantined: Verdict['quarantined'] = [];
    const lost: string[] = [];
    let onDestination = 0;
    for (const it of items) {
      if (it.storage === opts.destination) {
        onDestination++;
        continue;
      }
      const reason = reasons.get(`${PLURAL[it.kind]}:${it.id}`);
      if (reason) quarantined.push({ kind: it.kind, id: it.id, reason });
      else
        lost.push(`${it.kind} ${it.id} still on ${it.storage}, not quarantined${reason === '' ? ' (no reason)' : ''}`);
    }

    const { duplicates, onDestination: movesOnDestination } = moveViolations(moves, opts.destination);

    const landed = new Set(
      (
        db.prepare('SELECT kind, item_id, message FROM commits').all() as {
          kind: string;
          item_id: number;
          message: string;
        }[]
      ).map((c) => `${c.kind}:${c.item_id}:${c.message}`),
    );
    const messageOf = (a: { kind: Kind; marker: string }) =>
      a.kind === 'project' ? a.marker : a.kind === 'snippet' ? `Update ${a.marker}` : `Create ${a.marker}`;
    const commitsLost: string[] = [];
    const landedPerItem = new Map<string, number>();
    for (const a of opts.ledger.accepted) {
      const key = `${a.kind}:${a.id}`;
      if (!landed.has(`${key}:${messageOf(a)}`))
        commitsLost.push(`${key}: accepted commit ${a.marker} is not in the commits table`);
      landedPerItem.set(key, (landedPerItem.get(key) ?? 0) + 1);
    }
    let ambiguousLanded = 0;
    for (const a of opts.ledger.ambiguous) {
      const key = `${a.kind}:${a.id}`;
      if (landed.has(`${key}:${messageOf(a)}`)) {
        ambiguousLanded++;
        landedPerItem.set(key, (landedPerItem.get(key) ?? 0) + 1);
      }
    }
    const byKey = new Map(items.map((it) => [`${it.kind}:${it.id}`, it]));
    for (const [key, n] of landedPerItem) {
      const it = byKey.get(key);
      const expected = (opts.initialCommits.get(key) ?? 0) + n;
      if (!it) commitsLost.push(`${key}: item vanished`);
      else if (it.commit_count !== expected)
        commitsLost.push(`${key}: ${it.commit_count} commits, expected ${expected}`);
      else if (it.checksum !== fakeChecksum(it.kind, it.id, expected))
        commitsLost.push(`${key}: checksum does not match ${expected} commits`);
    }

    const fates: Record<string, number> = {};
    for (const m of moves) fates[m.fate] = (fates[m.fate] ?? 0) + 1;
    return {
      items: items.length,
      onDestination,
      quarantined,
      lost,
      duplicates,
      movesOnDestination,
      commitsLost,
      commitsAccepted: opts.ledger.accepted.length,
      commitsAmbiguousLanded: ambiguousLanded,
      moves: moves.length,
      fates,
    };
  } finally {
    db.close();
    cp.close();
  }
}
