/**
 * The release and tier profiles of the release matrix (test/release-matrix.test.ts), and what each
 * one's GitLab does that a standard drain can see (docs/gitlab-behaviour.md).
 */

export type ItemKind = 'project' | 'snippet' | 'group';
export type Edition = 'ee' | 'ce';
export type Tier = 'free' | 'premium' | 'ultimate';

/** A release and tier profile of the matrix. */
export interface Profile {
  name: string;
  version: string;
  edition: Edition;
  tier: Tier;
  /** What tells this profile apart from its neighbour, for a standard drain (or that nothing does). */
  differs: string;
}

const since = (version: string, major: number, minor: number): boolean => {
  const [a = 0, b = 0] = version.split('.').map(Number);
  return a !== major ? a > major : b >= minor;
};

/** What a profile's GitLab does that the standard drain can see (docs/gitlab-behaviour.md). */
export interface Release {
  /** Move records carry `error_message` (16.7). */
  messages: boolean;
  /** The move worker takes the container's lease (16.6, taken). */
  lease: boolean;
  /** `GET /snippets/all` lists snippets by storage (EE 16.3+); otherwise by move records. */
  snippetsListed: boolean;
  /** Group wiki repositories exist and move (EE, any tier). */
  groupWikis: boolean;
  /**
   * Groups can be listed by storage: they show `repository_storage` (EE Premium/Ultimate) and the
   * `GET /groups` filter is declared (16.3; before, it is ignored). Otherwise by move records.
   */
  groupsListed: boolean;
  /** Hidden projects exist (EE). */
  hidden: boolean;
  /**
   * The per-item project move routes find hidden and pending-delete projects (GitLab MR 135748:
   * 16.6 or 16.7, taken as 16.7). Before, only the bulk move reaches them.
   */
  hiddenMovable: boolean;
  /** A moved fork-network member gets a pool copy on the destination (16.6 by default; 16.3 only behind a flag that is off). */
  poolsFollow: boolean;
}

export function releaseOf(p: Profile): Release {
  const ee = p.edition === 'ee';
  return {
    messages: since(p.version, 16, 7),
    lease: since(p.version, 16, 6),
    snippetsListed: ee && since(p.version, 16, 3),
    groupWikis: ee,
    groupsListed: ee && p.tier !== 'free' && since(p.version, 16, 3),
    hidden: ee,
    hiddenMovable: since(p.version, 16, 7),
    poolsFollow: since(p.version, 16, 6),
  };
}
