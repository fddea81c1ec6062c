/**
 * The release matrix: one standard drain (./support/release-scenario.ts: failures of every class
 * the release can produce, a real no-space that the destination's free space confirms, a cleanup
 * failure, a fork network with a fork of a fork, group wikis, a hidden and a pending-delete project)
 * on every GitLab release and tier profile the ledger tells apart (docs/gitlab-behaviour.md §10,
 * "The release matrix"). For each, the final report on stdout, `report --json`, `status --json`, the
 * metrics file and the exit code must be true for that profile, judged from the sandbox's own
 * records: where each item is, which moves it made and how they ended. Above all, a run never exits
 * 0 while a repository of a planned kind is still on a drained source, and every one that is left is
 * reported, with the class its release lets shardmove know.
 *
 * Profiles run four at a time, each judged by its own test as it ends: each is a sandbox and the
 * `shardmove` commands in this process on a simulated clock of its own (./support/release-run.ts),
 * so the plan's 5-second stuck limits and every poll take no real time.
 */
import { describe, expect, it } from 'vitest';
import { checkAccounts, checkSandbox, gapOf, gapsOn } from './support/release-checks.js';
import { NOTHING_SKIPPED } from './support/release-judge.js';
import { runProfile } from './support/release-run.js';
import type { ProfileRun } from './support/release-run.js';
import type { Profile } from './support/release-profile.js';
import { releaseOf } from './support/release-profile.js';
import { pickIds, ROLES } from './support/release-scenario.js';
/**
 * Every profile the ledger distinguishes for a drain, and what tells it from the row above. Where
 * nothing a drain can see differs, the row says so and expects the same as its neighbour. EE
 * Premium is not a row: everything a drain sees is Ultimate's there (group wikis are Premium).
 */
const PROFILES: Profile[] = [
  {
    name: '15.11 EE Ultimate',
    version: '15.11.0',
    edition: 'ee',
    tier: 'ultimate',
    differs:
      'oldest: no error_message, no move lease, no GET /snippets/all (snippets by move records), the GET /groups storage filter ignored (group wikis by move records), no pool replication; Sidekiq routes each move worker to its own queue (exporters only: the drain sees what 16.0 shows)',
  },
  {
    name: '16.0 EE Ultimate',
    version: '16.0.0',
    edition: 'ee',
    tier: 'ultimate',
    differs: "the same drain as 15.11; Gitaly's tar failure still quotes tar's stderr, in the Sidekiq log only",
  },
  {
    name: '16.2 EE Ultimate',
    version: '16.2.0',
    edition: 'ee',
    tier: 'ultimate',
    differs: "tar's stderr out of Gitaly's text (16.1), in the Sidekiq log only: the drain sees what 16.0 shows",
  },
  {
    name: '16.3 EE Ultimate',
    version: '16.3.0',
    edition: 'ee',
    tier: 'ultimate',
    differs:
      'GET /snippets/all: snippets by listing; the GET /groups storage filter: group wikis by listing; pool replication exists behind a flag that is off',
  },
  {
    name: '16.5 EE Ultimate',
    version: '16.5.0',
    edition: 'ee',
    tier: 'ultimate',
    differs:
      "an administrator sees the nested parent's repository_storage, which shardmove does not read yet: the drain sees what 16.3 shows",
  },
  {
    name: '16.6 EE Ultimate',
    version: '16.6.0',
    edition: 'ee',
    tier: 'ultimate',
    differs:
      'the move lease: a rerun fails its move, a lease left by another move leaves the item read-only; pools replicated on move by default',
  },
  {
    name: '16.7 EE Ultimate',
    version: '16.7.0',
    edition: 'ee',
    tier: 'ultimate',
    differs: 'error_message on move records: every class is named',
  },
  {
    name: '17.2 EE Ultimate',
    version: '17.2.0',
    edition: 'ee',
    tier: 'ultimate',
    differs: 'nothing a drain sees differs from 16.7',
  },
  {
    name: '17.7 EE Ultimate',
    version: '17.7.0',
    edition: 'ee',
    tier: 'ultimate',
    differs:
      'pre-flight inspects its own token (POST /admin/token, 17.5); the Geo proxy answers 500 for an unreachable site (no Geo in this drain)',
  },
  {
    name: '17.11 EE Ultimate',
    version: '17.11.0',
    edition: 'ee',
    tier: 'ultimate',
    differs: 'the newest release the sandbox knows',
  },
  {
    name: '17.11 EE Free',
    version: '17.11.0',
    edition: 'ee',
    tier: 'free',
    differs: 'groups show no repository_storage: their wikis (a lapsed licence keeps them) move by move records',
  },
  {
    name: '17.11 CE',
    version: '17.11.0',
    edition: 'ce',
    tier: 'free',
    differs: 'no group wikis and no group moves (groups skipped), no hidden projects, snippets by move records',
  },
];

const ids = pickIds();

/** Profiles run at most this many at a time (vitest starts up to five concurrent tests). */
const AT_ONCE = 4;
let running = 0;
const waiting: (() => void)[] = [];
async function limited<T>(work: () => Promise<T>): Promise<T> {
  while (running >= AT_ONCE) await new Promise<void>((go) => waiting.push(go));
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/** Each profile runs once, for its own test and its known gaps' tests. */
const runs = new Map<string, Promise<ProfileRun>>();
function runOf(profile: Profile): Promise<ProfileRun> {
  let run = runs.get(profile.name);
  if (!run) {
    run = limited(() => runProfile(profile, ids));
    runs.set(profile.name, run);
  }
  return run;
}

describe('the standard drain on every release and tier (docs/gitlab-behaviour.md §10)', { timeout: 180_000 }, () => {
  it('finds an item for every fate the drain needs, each its own', () => {
    for (const role of ROLES) expect(ids.get(role.role), role.role).toBeGreaterThan(0);
    const taken = ROLES.map((r) => `${r.kind}:${ids.get(r.role)}`);
    expect(new Set(taken).size).toBe(taken.length);
  });

  for (const profile of PROFILES) {
    const release = releaseOf(profile);
    it.concurrent(`${profile.name}: ${profile.differs}`, async ({ expect }) => {
      const out = await runOf(profile);
      checkSandbox(expect, profile, release, out, ids);
      const skip = gapsOn(release).map((g) => gapOf(g, release, out, ids));
      checkAccounts(expect, profile, release, out, ids, {
        items: new Set(skip.flatMap((s) => [...s.items])),
        moves: new Set(skip.flatMap((s) => [...s.moves])),
      });
    });
    // A known gap: the truth for its items too. Fails today; when it passes, the gap is closed.
    for (const gap of gapsOn(release)) {
      it.fails.concurrent(`${profile.name}, known gap (KNOWN_GAPS): ${gap}`, async ({ expect }) => {
        const out = await runOf(profile);
        checkAccounts(expect, profile, release, out, ids, NOTHING_SKIPPED);
      });
    }
  }
});
