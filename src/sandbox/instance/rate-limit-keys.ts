/**
 * The application rate limits' keys, settings, defaults and windows, apart from their checking
 * (./rate-limits.ts) so that the seed's schema can name the keys without importing the server's
 * side. Defaults and intervals: `lib/gitlab/application_rate_limiter.rb`, the 17.1 settings
 * migration and GitLab's "Rate limit on Projects/Groups API" pages.
 */
/** A release as (major, minor), as ../auth/token-types.ts has it. */
type Release = readonly [number, number];

/** A limit: its setting in the application settings, GitLab's default and its fixed window. */
export interface RateLimitDef {
  /** The field of `GET /application/settings`. */
  setting: string;
  threshold: number;
  intervalS: number;
  /** The route it guards (`METHOD pattern`), or null where the sandbox has no such route. */
  route: string | null;
  /** The first release with the limit; only anonymous callers are limited by it. */
  since: Release;
  anonymousOnly?: boolean;
  /** False: always checked once it exists (no feature flag). */
  flagged: boolean;
}

/** GitLab's keys (lib/gitlab/application_rate_limiter.rb) and defaults (the 17.1 migration, the docs). */
export const RATE_LIMITS = {
  projects_api: {
    setting: 'projects_api_limit',
    threshold: 2000,
    intervalS: 600,
    route: 'GET /api/v4/projects',
    since: [17, 1],
    flagged: true,
  },
  project_api: {
    setting: 'project_api_limit',
    threshold: 400,
    intervalS: 60,
    route: 'GET /api/v4/projects/:id',
    since: [17, 1],
    flagged: true,
  },
  groups_api: {
    setting: 'groups_api_limit',
    threshold: 200,
    intervalS: 60,
    route: 'GET /api/v4/groups',
    since: [17, 1],
    flagged: true,
  },
  group_api: {
    setting: 'group_api_limit',
    threshold: 400,
    intervalS: 60,
    route: 'GET /api/v4/groups/:id',
    since: [17, 1],
    flagged: true,
  },
  group_projects_api: {
    setting: 'group_projects_api_limit',
    threshold: 600,
    intervalS: 60,
    route: null,
    since: [17, 1],
    flagged: true,
  },
  user_projects_api: {
    setting: 'user_projects_api_limit',
    threshold: 300,
    intervalS: 60,
    route: null,
    since: [17, 1],
    flagged: true,
  },
  user_contributed_projects_api: {
    setting: 'user_contributed_projects_api_limit',
    threshold: 100,
    intervalS: 60,
    route: null,
    since: [17, 1],
    flagged: true,
  },
  user_starred_projects_api: {
    setting: 'user_starred_projects_api_limit',
    threshold: 100,
    intervalS: 60,
    route: null,
    since: [17, 1],
    flagged: true,
  },
  projects_api_rate_limit_unauthenticated: {
    setting: 'projects_api_rate_limit_unauthenticated',
    threshold: 400,
    intervalS: 600,
    route: 'GET /api/v4/projects',
    since: [16, 0],
    anonymousOnly: true,
    flagged: false,
  },
} as const satisfies Record<string, RateLimitDef>;

export type RateLimitKey = keyof typeof RATE_LIMITS;
export const RATE_LIMIT_KEYS = Object.keys(RATE_LIMITS) as RateLimitKey[];
