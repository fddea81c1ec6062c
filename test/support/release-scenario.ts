/**
 * The release matrix's standard drain (test/release-matrix.test.ts): one inventory, one set of
 * injected faults and one plan, run on every release and tier profile the ledger tells apart, with
 * what each item must end as on each profile.
 *
 * Faults are the sandbox's own, deterministic ones: a fault seed with `--move-failures` rates, and
 * `--broken-items`. A move's fate is a pure function of (seed, kind, item id, attempt)
 * (src/sandbox/faults.ts), so instead of hoping a seed gives each class somewhere, every role below
 * asks for the fates it needs attempt by attempt, and the inventory takes, per role, the first item
 * id whose draws are exactly those (`pickIds`, using the sandbox's injector itself). The sandbox's
 * records then say which fate each move had (its `moves.fate` column), which the test checks before
 * it judges anything else, so a change in the draws fails loudly instead of testing something else.
 */
import type { MoveFate, FaultOptions } from '../../src/sandbox/faults.js';
import { createFaults } from '../../src/sandbox/faults.js';
import type { ItemKind, Release } from './release-profile.js';

/** The sources, drained in this order, and the destination. */
export const SOURCES = ['nfs-1', 'nfs-2', 'default'] as const;
export const DESTINATION = 'cluster';
/** Attempts per item (the plan's retry.max_attempts). */
export const MAX_ATTEMPTS = 2;

/**
 * The injected classes, each at the same rate, and `--move-fail-rate` for cleanup failures (a tenth
 * of its failures end `cleanup failed`). No `no-space` rate: the one no-space of the drain is real,
 * the destination's filesystem running out (see VICTIM below).
 */
export const FAULTS: FaultOptions = {
  latencyMs: 0,
  errorRate: 0,
  resetRate: 0,
  moveFailRate: 0.1,
  stuckRate: 0,
  brokenItems: [],
  moveFailures: {
    checksum: 0.05,
    'read-only': 0.05,
    'lease-held': 0.05,
    'source-missing': 0.05,
    'gitaly-unavailable': 0.05,
    'stuck-queued': 0.05,
    'stuck-running': 0.05,
    'tar-failed': 0.05,
    timeout: 0.05,
  },
  seed: 31,
};

/** How an item must end on a profile: moved (with a copy left on its source, or not), or quarantined with a class. */
export type Outcome = { end: 'moved'; staleCopy?: boolean } | { end: 'quarantined'; class: string };

/** One item of the standard drain. */
export interface Role {
  role: string;
  kind: ItemKind;
  storage: (typeof SOURCES)[number];
  sizeMb: number;
  /** The fates its moves draw, attempt by attempt (what pickIds looks for). */
  draws: MoveFate[];
  /** Always fails its copy (`--broken-items`), whatever it draws. */
  broken?: boolean;
  /** Seed fields beyond id, storage and size (forks, hidden, pending deletion). */
  fields?: (ids: RoleIds) => Record<string, unknown>;
  /** Whether the profile has this item at all (hidden projects: EE; group wikis: EE). */
  exists?: (r: Release) => boolean;
  expect: (r: Release) => Outcome;
  /** The fates the sandbox records for its moves on the profile (default: `draws`). */
  recorded?: (r: Release) => MoveFate[];
  /** Where shardmove is known to report this item wrongly today: the gap's name (KNOWN_GAPS). */
  gap?: (r: Release) => string | undefined;
}

export type RoleIds = (role: string) => number;

/** A class as the release records it: before 16.7 no move has a reason, so every failed move is unknown. */
const named = (r: Release, cls: string): Outcome => ({ end: 'quarantined', class: r.messages ? cls : 'unknown' });
const moved: Outcome = { end: 'moved' };
const wikis = (r: Release) => r.groupWikis;

/** A failure that happens on both attempts, then quarantined with its class. */
function twice(role: string, fate: MoveFate, cls: string): Role {
  return { role, kind: 'project', storage: 'nfs-1', sizeMb: 6, draws: [fate, fate], expect: (r) => named(r, cls) };
}

/**
 * Known gaps: where shardmove is wrong today on some profiles, and why it is not fixed here. The
 * matrix judges every other item exactly, and a test per gap and profile (`it.fails`) asserts the
 * truth for the gap's items, so it turns red the day the gap is closed and its mark can go.
 */
export const KNOWN_GAPS: Record<string, string> = {};

/**
 * A kind moved by move records is confirmed gone from its source by one more bulk move, which
 * GitLab's bulk job makes for every repository still there: the quarantined one draws a third move.
 */
const CONFIRMED_BY_RECORDS: MoveFate[] = ['fail', 'fail', 'fail'];

/** The project that does not fit: 600 MiB, alone on the last source, when the destination is nearly full. */
export const VICTIM = 'no-space';
/** The snippet whose size the API does not give: pre-flight counts 10 MiB for it, and it lands 1000. */
export const BIG_SNIPPET = 'big snippet';
/** Room the destination lacks, against everything the drain would land (see capacityOf). */
export const SHORT_MB = 300;

export const ROLES: Role[] = [
  // A fork network: the root (public, so it has a pool), a direct fork, a fork of that fork (no pool
  // on any release), and a direct fork seeded on the other source.
  { role: 'fork root', kind: 'project', storage: 'nfs-1', sizeMb: 8, draws: ['ok'], expect: () => moved },
  {
    role: 'direct fork',
    kind: 'project',
    storage: 'nfs-1',
    sizeMb: 3,
    draws: ['ok'],
    fields: (id) => ({ forked_from: id('fork root') }),
    expect: () => moved,
  },
  {
    role: 'fork of a fork',
    kind: 'project',
    storage: 'nfs-1',
    sizeMb: 2,
    draws: ['ok'],
    fields: (id) => ({ forked_from: id('direct fork') }),
    expect: () => moved,
  },
  {
    role: 'direct fork elsewhere',
    kind: 'project',
    storage: 'nfs-2',
    sizeMb: 3,
    draws: ['ok'],
    fields: (id) => ({ forked_from: id('fork root') }),
    expect: () => moved,
  },
  {
    role: 'hidden',
    kind: 'project',
    storage: 'nfs-1',
    sizeMb: 5,
    draws: ['ok'],
    fields: () => ({ hidden: true }),
    exists: (r) => r.hidden,
    // Before 16.7 only the bulk move reaches it, and the drain holds that back while other
    // projects of its source are quarantined (the bulk move would move them again).
    expect: (r) => (r.hiddenMovable ? moved : { end: 'quarantined', class: 'hidden-unreachable' }),
    recorded: (r) => (r.hiddenMovable ? ['ok'] : []),
  },
  {
    role: 'pending delete',
    kind: 'project',
    storage: 'nfs-2',
    sizeMb: 5,
    draws: ['ok'],
    fields: () => ({ pending_delete: true }),
    // Before 16.7 only the bulk move reaches it: nothing else is quarantined on nfs-2, so the drain
    // ends with the bulk move of nfs-2, which moves it.
    expect: () => moved,
  },
  { role: 'plain 1', kind: 'project', storage: 'nfs-1', sizeMb: 20, draws: ['ok'], expect: () => moved },
  { role: 'plain 2', kind: 'project', storage: 'nfs-2', sizeMb: 15, draws: ['ok'], expect: () => moved },
  { role: 'plain 3', kind: 'project', storage: 'nfs-2', sizeMb: 12, draws: ['ok'], expect: () => moved },
  // Retried once, then moved.
  { role: 'retried', kind: 'project', storage: 'nfs-1', sizeMb: 7, draws: ['fail', 'ok'], expect: () => moved },
  // GitLab moved it, and could not remove the source copy: `cleanup failed`, a copy left behind.
  {
    role: 'cleanup failed',
    kind: 'project',
    storage: 'nfs-1',
    sizeMb: 9,
    draws: ['cleanup_fail'],
    expect: () => ({ end: 'moved', staleCopy: true }),
  },
  twice('checksum', 'fail', 'checksum'),
  twice('tar-failed', 'tar_cut_short', 'tar-failed'),
  twice('timeout', 'deadline_exceeded', 'timeout'),
  twice('gitaly-unavailable', 'unavailable', 'gitaly-unavailable'),
  twice('source-missing', 'source_missing', 'source-missing'),
  // A Sidekiq rerun inside the job's own lease: failed without a message (16.6+); before the lease
  // the rerun finds its move started and does nothing, so it stays started and is stuck.
  {
    role: 'lease-held',
    kind: 'project',
    storage: 'nfs-1',
    sizeMb: 6,
    draws: ['interrupted', 'interrupted'],
    expect: (r) => (r.lease ? named(r, 'lease-held') : { end: 'quarantined', class: 'stuck-running' }),
    recorded: (r) => (r.lease ? ['interrupted', 'interrupted'] : ['interrupted']),
  },
  // Failed from `scheduled` by another move's lease, read-only left behind: the next POST is
  // refused. Before the lease (16.6) nothing refuses the job, and the move runs.
  {
    role: 'read-only',
    kind: 'project',
    storage: 'nfs-1',
    sizeMb: 6,
    draws: ['read_only_left'],
    expect: (r) => (r.lease ? { end: 'quarantined', class: 'read-only' } : moved),
  },
  {
    role: 'stuck queued',
    kind: 'project',
    storage: 'nfs-1',
    sizeMb: 6,
    draws: ['stuck_queued'],
    expect: () => ({ end: 'quarantined', class: 'stuck-queued' }),
  },
  {
    role: 'stuck running',
    kind: 'project',
    storage: 'nfs-1',
    sizeMb: 6,
    draws: ['stuck'],
    expect: () => ({ end: 'quarantined', class: 'stuck-running' }),
  },
  {
    role: VICTIM,
    kind: 'project',
    storage: 'default',
    sizeMb: 600,
    draws: ['ok', 'ok'],
    expect: (r) => named(r, 'no-space'),
    recorded: () => ['no_space', 'no_space'],
  },
  { role: BIG_SNIPPET, kind: 'snippet', storage: 'nfs-1', sizeMb: 1000, draws: ['ok'], expect: () => moved },
  { role: 'snippet', kind: 'snippet', storage: 'nfs-2', sizeMb: 5, draws: ['ok'], expect: () => moved },
  {
    role: 'broken snippet',
    kind: 'snippet',
    storage: 'nfs-1',
    sizeMb: 5,
    draws: [],
    broken: true,
    expect: (r) => named(r, 'checksum'),
    recorded: (r) => (r.snippetsListed ? ['fail', 'fail'] : CONFIRMED_BY_RECORDS),
  },
  // Given up after two attempts; where snippets move by move records, the bulk move that confirms
  // the source is empty makes a third move of it, which lands: shardmove follows it and says so.
  {
    role: 'snippet moved by the confirming bulk move',
    kind: 'snippet',
    storage: 'nfs-1',
    sizeMb: 5,
    draws: ['fail', 'fail', 'ok'],
    expect: (r) => (r.snippetsListed ? named(r, 'checksum') : moved),
    recorded: (r) => (r.snippetsListed ? ['fail', 'fail'] : ['fail', 'fail', 'ok']),
  },
  {
    role: 'group wiki 1',
    kind: 'group',
    storage: 'nfs-1',
    sizeMb: 10,
    draws: ['ok'],
    exists: wikis,
    expect: () => moved,
  },
  {
    role: 'group wiki 2',
    kind: 'group',
    storage: 'nfs-2',
    sizeMb: 10,
    draws: ['ok'],
    exists: wikis,
    expect: () => moved,
  },
  {
    role: 'group wiki moved by the confirming bulk move',
    kind: 'group',
    storage: 'nfs-2',
    sizeMb: 10,
    draws: ['fail', 'fail', 'ok'],
    exists: wikis,
    expect: (r) => (r.groupsListed ? named(r, 'checksum') : moved),
    recorded: (r) => (r.groupsListed ? ['fail', 'fail'] : ['fail', 'fail', 'ok']),
  },
  {
    role: 'broken group wiki',
    kind: 'group',
    storage: 'nfs-2',
    sizeMb: 10,
    draws: [],
    broken: true,
    exists: wikis,
    expect: (r) => named(r, 'checksum'),
    recorded: (r) => (r.groupsListed ? ['fail', 'fail'] : CONFIRMED_BY_RECORDS),
  },
];

/**
 * Item ids per role: per kind, the first unused id from 1 whose fates, attempt by attempt, are the
 * role's draws (broken items take the first unused id: their fate is forced).
 */
export function pickIds(faults: FaultOptions = FAULTS): Map<string, number> {
  const injector = createFaults({ ...faults, brokenItems: [] });
  const used = new Map<ItemKind, Set<number>>();
  const out = new Map<string, number>();
  for (const role of ROLES) {
    const taken = used.get(role.kind) ?? new Set<number>();
    used.set(role.kind, taken);
    let id = 1;
    const fits = (n: number) => role.draws.every((fate, i) => injector.moveFate(role.kind, n, i + 1) === fate);
    while (taken.has(id) || !fits(id)) {
      if (++id > 100_000) throw new Error(`no item draws ${role.draws.join(', ')} under these faults (${role.role})`);
    }
    taken.add(id);
    out.set(role.role, id);
  }
  return out;
}

/** The roles a profile has. */
export function rolesOf(release: Release): Role[] {
  return ROLES.filter((r) => r.exists?.(release) ?? true);
}
