/**
 * The release matrix's judgement of one profile's run (test/release-matrix.test.ts): first that the
 * sandbox did what the scenario asks of it on that release, then that each of shardmove's accounts
 * (exit code, stdout, `status --json`, `report --json`, the metrics file) agrees with the sandbox's
 * records, leaving out only a known gap's items and moves (`skip`).
 */
import type { ExpectStatic } from 'vitest';
import type { Profile, Release } from './release-profile.js';
import { DESTINATION, MAX_ATTEMPTS, ROLES, VICTIM, rolesOf } from './release-scenario.js';
import type { ProfileRun } from './release-run.js';
import {
  countBy,
  keyOf,
  moveClass,
  parseStdout,
  perSource,
  PLURAL,
  tallyOfRows,
  readMetrics,
  tallyWithout,
  truthOf,
  type Skip,
  type Tally,
} from './release-judge.js';

interface StatusJson {
  state: string;
  counts: { kind: string; source: string; state: string; n: number }[];
  kinds: { kind: string; total: number; done: number; quarantined: number }[];
  quarantined: { kind: string; id: number; class: string; remedy: string }[];
  orphans: { kind: string; id: number; source: string; possible?: boolean; moveId: number | null }[];
  stuck: { kind: string; id: number; moveId: number; moveState: string; readOnly: boolean | null }[];
}

interface ReportJson {
  outcome: { state: string; instanceVersion: string };
  storages: { storage: string; total: number; moved: number; quarantined: number }[];
  kinds: {
    kind: string;
    total: number;
    moved: number;
    quarantined: number;
    movesFinished: number;
    movesFailed: number;
  }[];
  quarantined: { kind: string; id: number; class: string }[];
  verification: { result: { ok: boolean } | null };
}

const tallyOf = (rows: { kind: string; moved: number; total: number; quarantined: number }[]): Tally =>
  Object.fromEntries(rows.map((r) => [r.kind, { moved: r.moved, total: r.total, quarantined: r.quarantined }]));

/** The items of a known gap on this profile, and the moves it leaves unfollowed (a records kind's moves past the last attempt). */
export function gapOf(gap: string, release: Release, run: ProfileRun, ids: ReadonlyMap<string, number>): Skip {
  const items = new Set(
    rolesOf(release)
      .filter((r) => r.gap?.(release) === gap)
      .map((r) => keyOf(r.kind, ids.get(r.role)!)),
  );
  const byRecords = (kind: string) =>
    (kind === 'snippet' && !release.snippetsListed) ||
    (kind === 'group' && release.groupWikis && !release.groupsListed);
  const seen = new Map<string, number>();
  const moves = new Set<number>();
  for (const m of run.moves) {
    const key = keyOf(m.kind, m.itemId);
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    if (items.size > 0 && byRecords(m.kind) && n > MAX_ATTEMPTS) moves.add(m.id);
  }
  return { items, moves };
}

/** The names of the known gaps open on this profile. */
export function gapsOn(release: Release): string[] {
  return [...new Set(rolesOf(release).flatMap((r) => r.gap?.(release) ?? []))];
}

/** The sandbox did what the scenario asks: each item's moves had their fates, and it ended where the release sends it. */
export function checkSandbox(
  expect: ExpectStatic,
  profile: Profile,
  release: Release,
  out: ProfileRun,
  ids: ReadonlyMap<string, number>,
): void {
  const check = expect.soft;
  for (const role of rolesOf(release)) {
    const key = keyOf(role.kind, ids.get(role.role)!);
    if (role.kind === 'group' && !release.groupWikis) continue;
    const item = out.items.find((i) => keyOf(i.kind, i.id) === key);
    const fates = out.moves.filter((m) => keyOf(m.kind, m.itemId) === key).map((m) => m.fate);
    check(fates, `${role.role}: the fates of its moves`).toEqual(role.recorded?.(release) ?? role.draws);
    const want = role.expect(release);
    if (want.end === 'moved') {
      check(item?.storage, `${role.role} moved`).toBe(DESTINATION);
      check(item?.stale_copies, `${role.role}: copies left`).toEqual(want.staleCopy ? [role.storage] : []);
    } else if (want.end === 'quarantined') check(item?.storage, `${role.role} left`).toBe(role.storage);
  }
  // Before 16.7 a move record has no error_message at all; from 16.7 every one has the field.
  for (const m of out.moves) check(m.hasErrorMessage, `move ${m.id}: error_message`).toBe(release.messages);
  // The fork network left no pool on a drained source; its pool followed it where the release copies pools.
  const root = ids.get('fork root')!;
  check(
    out.pools.filter((p) => p.network === root).map((p) => p.storage),
    'pools of the fork network',
  ).toEqual(release.poolsFollow ? [DESTINATION] : []);
  // The victim really did not fit, and its job's log says so in the words of its release's Gitaly.
  const victim = keyOf('project', ids.get(VICTIM)!);
  const quoted = /^(15\.|16\.0\.)/.test(profile.version);
  for (const m of out.moves.filter((x) => keyOf(x.kind, x.itemId) === victim))
    check(m.exception, 'the victim').toMatch(
      quoted ? /wait for tar, stderr: .*No space left on device/ : /wait for tar: exit status 2\.$/,
    );
}

/** shardmove's accounts of the run against the sandbox's records, without `skip`'s items and moves. */
export function checkAccounts(
  expect: ExpectStatic,
  profile: Profile,
  release: Release,
  out: ProfileRun,
  ids: ReadonlyMap<string, number>,
  skip: Skip,
): void {
  const check = expect.soft;
  const said = `${out.run.stdout}\n${out.run.stderr}`;
  const truth = truthOf(out, rolesOf(release), ids, release, skip);
  const roleOf = new Map(ROLES.map((r) => [keyOf(r.kind, ids.get(r.role)!), r]));
  const without = <T>(m: Map<string, T>) => new Map([...m].filter(([k]) => !skip.items.has(k)));
  const sourceRow = (item: string) => `${PLURAL[roleOf.get(item)!.kind]}@${roleOf.get(item)!.storage}`;
  const storageRow = (item: string) => roleOf.get(item)!.storage;

  // The exit code: never 0 while a planned repository is on a drained source (3 then, 0 otherwise).
  check(out.run.code === 0 && truth.left.length > 0, `exit 0 with ${truth.left.join(', ')} left`).toBe(false);
  check(out.run.code, said).toBe(truth.left.length > 0 ? 3 : 0);

  // Every item left is reported, exactly those, with the class its release lets shardmove know.
  const expected = new Map(
    truth.left.map((k) => {
      const want = roleOf.get(k)!.expect(release);
      return [k, want.end === 'quarantined' ? want.class : `(expected ${want.end})`] as const;
    }),
  );
  const printed = parseStdout(out.run.stdout);
  check(printed.headline, said).toBe('DONE WITH QUARANTINED ITEMS: everything else moved and verified');
  const printedQ = new Map([...printed.quarantined].map(([k, q]) => [k, q.class]));
  check(without(printedQ), 'stdout: quarantined').toEqual(expected);
  check(tallyWithout(printed.tally, new Set(printedQ.keys()), skip), 'stdout: per kind').toEqual(truth.tally);
  check(printed.copies.sort(), 'stdout: copies left behind').toEqual([...truth.staleCopies].sort());
  // Passed for what the run moves; what is quarantined is named as staying on its source.
  check(printed.verification).toMatch(
    truth.left.length > 0
      ? /^Verification: passed for what this run moves; \d+ items? stays?[: ]/
      : /^Verification: passed$/,
  );
  const recordsTruth = Object.fromEntries(
    Object.keys(printed.byRecords).map((row) => {
      const t = truth.bySource[row] ?? { moved: 0, total: 0, quarantined: 0 };
      return [row, { moved: t.moved, quarantined: t.quarantined }];
    }),
  );
  const recordsSaid = Object.fromEntries(
    Object.entries(
      tallyWithout(
        Object.fromEntries(
          Object.entries(printed.byRecords).map(([k, v]) => [k, { ...v, total: v.moved + v.quarantined }]),
        ),
        new Set(printedQ.keys()),
        skip,
        sourceRow,
      ),
    ).map(([k, v]) => [k, { moved: v.moved, quarantined: v.quarantined }]),
  );
  check(recordsSaid, 'stdout: verified by move records, per source').toEqual(recordsTruth);
  check(Object.keys(printed.byRecords).length > 0, 'stdout: kinds verified by move records').toBe(
    !release.snippetsListed || (release.groupWikis && !release.groupsListed),
  );
  if (!release.groupWikis) check(said).toMatch(/groups skipped: /);

  const status = JSON.parse(out.status.stdout) as StatusJson;
  const statusQ = new Map(status.quarantined.map((q) => [keyOf(q.kind, q.id), q.class]));
  check(status.state, 'status').toBe('doneWithQuarantine');
  check(without(statusQ), 'status: quarantined').toEqual(expected);
  for (const q of status.quarantined.filter((x) => x.class === 'unknown'))
    check(q.remedy, 'unknown before 16.7').toMatch(/recorded no reason before 16\.7.*UpdateRepositoryStorageWorker/);
  const statusTally = tallyOf(status.kinds.map((k) => ({ ...k, moved: k.done })));
  check(tallyWithout(statusTally, new Set(statusQ.keys()), skip), 'status: per kind').toEqual(truth.tally);
  check(
    tallyWithout(tallyOfRows(status.counts), new Set(statusQ.keys()), skip, sourceRow),
    'status: per source',
  ).toEqual(truth.bySource);
  // Stuck moves: the sandbox's move, in the state it is in, and the item's read-only flag.
  const running = out.moves.filter(
    (m) => !skip.moves.has(m.id) && ['scheduled', 'started', 'replicated'].includes(m.state),
  );
  check(
    Object.fromEntries(status.stuck.map((x) => [keyOf(x.kind, x.id), [x.moveId, x.moveState, x.readOnly]])),
    'status: stuck moves',
  ).toEqual(
    Object.fromEntries(
      running.map((m) => {
        const item = out.items.find((i) => i.kind === m.kind && i.id === m.itemId);
        return [keyOf(m.kind, m.itemId), [m.id, m.state, item?.read_only]];
      }),
    ),
  );
  // Copies that are there, by the sandbox's records; a copy a failed or stuck move *may* have left on
  // the destination (its job may have died after copying) is listed as possible, and is judged apart.
  check(
    status.orphans
      .filter((o) => !o.possible)
      .map((o) => `${keyOf(o.kind, o.id)}@${o.source}`)
      .sort(),
    'status: copies',
  ).toEqual([...truth.staleCopies].sort());
  for (const o of status.orphans.filter((c) => c.possible)) {
    const move = out.moves.find((m) => m.id === o.moveId && keyOf(m.kind, m.itemId) === keyOf(o.kind, o.id));
    check(move?.state, `status: possible copy of ${keyOf(o.kind, o.id)} names a move that did not finish`).toMatch(
      /^(failed|started|replicated)$/,
    );
  }

  const report = JSON.parse(out.report.stdout) as ReportJson;
  const reportQ = new Map(report.quarantined.map((q) => [keyOf(q.kind, q.id), q.class]));
  check(report.outcome.state, 'report').toBe('doneWithQuarantine');
  check(report.outcome.instanceVersion).toBe(profile.version);
  check(without(reportQ), 'report: quarantined').toEqual(expected);
  check(tallyWithout(tallyOf(report.kinds), new Set(reportQ.keys()), skip), 'report: per kind').toEqual(truth.tally);
  const storages = tallyOf(report.storages.map((r) => ({ ...r, kind: r.storage })));
  check(tallyWithout(storages, new Set(reportQ.keys()), skip, storageRow), 'report: per source').toEqual(
    perSource(truth.bySource),
  );
  const perKind = (f: (k: ReportJson['kinds'][number]) => number) =>
    Object.fromEntries(report.kinds.map((k) => [k.kind, f(k)]).filter(([, n]) => n !== 0));
  check(
    perKind((k) => k.movesFinished),
    'report: moves that landed',
  ).toEqual(truth.finished);
  check(
    perKind((k) => k.movesFailed),
    'report: moves failed or stuck',
  ).toEqual(truth.failed);
  check(report.verification.result?.ok, 'report: verification').toBe(true);

  // The metrics file: the same counts, and each failed move's class as this release records it
  // (a move's class is what GitLab said of it: the victim's moves are tar failures there, while
  // the item, its free space read, is quarantined as no-space; docs/events.md).
  const metrics = readMetrics(out.metrics);
  check(metrics.outcome, 'metrics: outcome').toBe('done_with_quarantine');
  check(metrics.step, 'metrics: step').toBe('doneWithQuarantine');
  const metricsTally = tallyOf(
    Object.entries(metrics.items).map(([kind, s]) => ({
      kind,
      moved: s.moved ?? 0,
      total: Object.values(s).reduce((a, v) => a + v, 0),
      quarantined: s.quarantined ?? 0,
    })),
  );
  check(tallyWithout(metricsTally, new Set(statusQ.keys()), skip), 'metrics: items').toEqual(truth.tally);
  check(
    tallyWithout(tallyOfRows(metrics.itemRows), new Set(statusQ.keys()), skip, sourceRow),
    'metrics: items per source',
  ).toEqual(truth.bySource);
  check(metrics.finished, 'metrics: moves that landed').toEqual(truth.finished);
  check(metrics.failed, 'metrics: moves failed or stuck').toEqual(truth.failed);
  const ended = out.moves.filter(
    (m) => !skip.moves.has(m.id) && m.state !== 'finished' && m.state !== 'cleanup failed',
  );
  check(metrics.failedByClass, 'metrics: failed moves by class').toEqual(
    countBy(ended.map((m) => moveClass(m, release, false))),
  );
  // Pre-flight's room and the no-space were read from the destination's free space.
  check(out.promQueries, 'free-space queries').toBeGreaterThanOrEqual(2);
}
