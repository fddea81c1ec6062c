/**
 * Which token a string is, by prefix, and what the admin token endpoint does with it at a given
 * instance version (spec: Supported token types, Versioning; reference §6). Pure: no lookups.
 */
import type { InstanceConfig } from '../seed-schema.js';

/** A release as [major, minor]; patch levels never change behaviour here. */
export type Release = readonly [number, number];

/** The kinds the endpoint tells apart. The four access-token types share one kind. */
export type TokenKind =
  | 'access'
  | 'deploy'
  | 'feed'
  | 'oauth_secret'
  | 'cluster_agent'
  | 'runner'
  | 'pipeline_trigger'
  | 'job'
  | 'feature_flags_client'
  | 'session'
  | 'incoming_email';

/** What DELETE does (spec table; a pipeline trigger token is expired, which is GitLab's revoke for it). */
export type DeleteAction = 'revoke' | 'reset' | 'delete' | 'expire';

/** One token type: when POST and DELETE learned it, and what DELETE does. */
export interface TokenTypeDef {
  kind: TokenKind;
  /** The release whose POST first identifies this type. */
  postSince: Release;
  /** The release whose DELETE first acts on it; null: never (CI/CD job tokens). */
  deleteSince: Release | null;
  action: DeleteAction | null;
  /** A feature flag DELETE additionally needs (off by default). */
  deleteFlag?: string;
}

/** A session is passed to the endpoint as the cookie pair, `_service_session=<value>`. */
export const SESSION_PREFIX = '_service_session=';

/** The token endpoint exists from 17.5 behind this flag and is generally available from 17.8. */
export const FINDER_FLAG = 'admin_agnostic_token_finder';
/** DELETE came in 17.7 behind this flag (reference §6). */
export const REVOKE_FLAG = 'api_admin_token_revoke';
/** DELETE of pipeline trigger tokens needs this flag (17.10+, off by default). */
export const TRIGGER_FLAG = 'token_api_expire_pipeline_triggers';

/**
 * GitLab's detection order (`Authn::AgnosticTokenIdentifier::TOKEN_TYPES`): the first type whose
 * prefix matches wins. Deploy and feed tokens come before access tokens, so a custom access-token
 * prefix can never shadow them.
 */
export const TOKEN_TYPES: readonly TokenTypeDef[] = [
  { kind: 'deploy', postSince: [17, 5], deleteSince: [17, 7], action: 'revoke' },
  { kind: 'feed', postSince: [17, 6], deleteSince: [17, 7], action: 'reset' },
  { kind: 'access', postSince: [17, 5], deleteSince: [17, 7], action: 'revoke' },
  { kind: 'oauth_secret', postSince: [17, 7], deleteSince: [17, 9], action: 'reset' },
  { kind: 'cluster_agent', postSince: [17, 7], deleteSince: [17, 9], action: 'revoke' },
  { kind: 'runner', postSince: [17, 7], deleteSince: [17, 9], action: 'reset' },
  { kind: 'pipeline_trigger', postSince: [17, 7], deleteSince: [17, 10], action: 'expire', deleteFlag: TRIGGER_FLAG },
  { kind: 'job', postSince: [17, 9], deleteSince: null, action: null },
  { kind: 'feature_flags_client', postSince: [17, 9], deleteSince: [17, 9], action: 'reset' },
  { kind: 'session', postSince: [17, 9], deleteSince: [17, 11], action: 'delete' },
  { kind: 'incoming_email', postSince: [17, 9], deleteSince: [17, 9], action: 'reset' },
];

/** The prefixes that identify a kind. Access tokens: the default and the current custom prefix only. */
export function prefixesOf(kind: TokenKind, config: Pick<InstanceConfig, 'personal_access_token_prefix'>): string[] {
  switch (kind) {
    case 'deploy':
      return ['gldt-'];
    case 'feed':
      return ['glft-'];
    case 'access':
      return [...new Set(['glpat-', config.personal_access_token_prefix].filter((p) => p !== ''))];
    case 'oauth_secret':
      return ['gloas-'];
    case 'cluster_agent':
      return ['glagent-'];
    // glrtr-: runners registered with a registration token (reference §6).
    case 'runner':
      return ['glrt-', 'glrtr-'];
    case 'pipeline_trigger':
      return ['glptt-'];
    case 'job':
      return ['glcbt-'];
    case 'feature_flags_client':
      return ['glffct-'];
    case 'session':
      return [SESSION_PREFIX];
    case 'incoming_email':
      return ['glimt-'];
  }
}

/** "17.11.0" -> [17, 11]; anything unparsable counts as the newest behaviour we know. */
export function parseRelease(version: string): Release {
  const m = /^(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2])] : [99, 0];
}

/** Whether release `v` is `since` or newer. */
export function atLeast(v: Release, since: Release): boolean {
  return v[0] !== since[0] ? v[0] > since[0] : v[1] >= since[1];
}

/** The outcome of identification: the type and the prefix that matched. */
export interface Identified {
  def: TokenTypeDef;
  /** The prefix that matched (a reset keeps it). */
  prefix: string;
}

/** The first type (in detection order) known at `release` whose prefix the token carries, or null (422). */
export function identifyToken(
  token: string,
  config: Pick<InstanceConfig, 'personal_access_token_prefix'>,
  release: Release,
): Identified | null {
  for (const def of TOKEN_TYPES) {
    if (!atLeast(release, def.postSince)) continue;
    // Longest prefix first, so a custom prefix that extends glpat- keeps its own identity.
    const prefix = prefixesOf(def.kind, config)
      .sort((a, b) => b.length - a.length)
      .find((p) => token.startsWith(p));
    if (prefix !== undefined) return { def, prefix };
  }
  return null;
}

/**
 * Whether DELETE acts on a type at this release. GitLab raises "Unsupported token type" or
 * "Revocation not supported for this token type" otherwise; the sandbox answers both with the
 * endpoint's 422 (the reference leaves the status unconfirmed; the issue asks for 422).
 */
export function isDeletable(def: TokenTypeDef, release: Release, flagOn: (name: string) => boolean): boolean {
  if (def.deleteSince === null || def.action === null) return false;
  if (!atLeast(release, def.deleteSince)) return false;
  return def.deleteFlag === undefined || flagOn(def.deleteFlag);
}
