/**
 * The queries authentication and the token endpoint run, prepared once per database. The sandbox
 * must serve thousands of requests per second, so nothing here is prepared per request.
 */
import type Database from 'better-sqlite3';
import type { CredentialRow, UserRow } from '../http/context.js';
import type { Db } from '../db.js';
import { perDatabase } from '../db.js';

/** Types that authenticate like a personal access token (PRIVATE-TOKEN, private_token, Bearer). */
export const ACCESS_TOKEN_TYPES: readonly string[] = ['personal', 'impersonation', 'project_access', 'group_access'];

/** The raw `users` row as SQLite returns it. */
export interface RawUserRow extends Omit<UserRow, 'admin' | 'bot'> {
  admin: number;
  bot: number;
}

/** A row of `applications` (OAuth applications). */
export interface ApplicationRow {
  id: number;
  name: string;
  uid: string;
  secret: string;
  redirect_uri: string;
  confidential: number;
  created_at: string;
}

/** The prepared statements of authentication and the token endpoint. */
export interface AuthStatements {
  credentialByValue: Database.Statement<[string], CredentialRow>;
  credentialByRefresh: Database.Statement<[string], CredentialRow>;
  credentialById: Database.Statement<[number], CredentialRow>;
  userById: Database.Statement<[number], RawUserRow>;
  userByUsername: Database.Statement<[string], RawUserRow>;
  touch: Database.Statement<[string, number]>;
  /** updated_at, id */
  revokeCredential: Database.Statement<[string, number]>;
  feature: Database.Statement<[string], { value: string }>;
  settings: Database.Statement<[], { value: string }>;
  applicationBySecret: Database.Statement<[string], ApplicationRow>;
  applicationByUid: Database.Statement<[string], ApplicationRow>;
  applicationById: Database.Statement<[number], ApplicationRow>;
  projectById: Database.Statement<[number], ProjectRef>;
}

/** What token records need to know about a project. */
export interface ProjectRef {
  id: number;
  name: string;
  path: string;
  namespace: string;
}

/** The prepared statements for `db`, created on first use. */
export const statements = perDatabase((db): AuthStatements => ({
  credentialByValue: db.prepare('SELECT * FROM credentials WHERE value = ?'),
  credentialByRefresh: db.prepare("SELECT * FROM credentials WHERE refresh_token = ? AND type = 'oauth'"),
  credentialById: db.prepare('SELECT * FROM credentials WHERE id = ?'),
  userById: db.prepare('SELECT * FROM users WHERE id = ?'),
  userByUsername: db.prepare('SELECT * FROM users WHERE username = ?'),
  touch: db.prepare('UPDATE credentials SET last_used_at = ? WHERE id = ?'),
  revokeCredential: db.prepare('UPDATE credentials SET revoked = 1, updated_at = ? WHERE id = ?'),
  feature: db.prepare('SELECT value FROM features WHERE name = ?'),
  settings: db.prepare("SELECT value FROM meta WHERE key = 'settings'"),
  applicationBySecret: db.prepare('SELECT * FROM applications WHERE secret = ?'),
  applicationByUid: db.prepare('SELECT * FROM applications WHERE uid = ?'),
  applicationById: db.prepare('SELECT * FROM applications WHERE id = ?'),
  projectById: db.prepare("SELECT id, name, path, namespace FROM items WHERE kind = 'project' AND id = ?"),
}));

/** SQLite integers to booleans. */
export function toUser(row: RawUserRow): UserRow {
  return { ...row, admin: row.admin === 1, bot: row.bot === 1 };
}

/** The user with this id, or undefined. */
export function findUserById(db: Db, id: number): UserRow | undefined {
  const row = statements(db).userById.get(id);
  return row ? toUser(row) : undefined;
}

/** A user id (all digits) or a username, case-insensitively, as sudo and GitLab's `find_user` take it. */
export function findUserByIdOrUsername(db: Db, ref: string): UserRow | undefined {
  if (/^\d+$/.test(ref)) {
    const id = Number(ref);
    return Number.isSafeInteger(id) ? findUserById(db, id) : undefined;
  }
  const row = statements(db).userByUsername.get(ref);
  return row ? toUser(row) : undefined;
}

/**
 * Whether a feature flag is on. A value stored through the Features API (or the seed) wins;
 * otherwise `dflt` applies, which lets a flag's default depend on the instance version.
 */
export function isFeatureEnabled(db: Db, name: string, dflt = false): boolean {
  return storedFeatureFlag(db, name) ?? dflt;
}

/**
 * A feature flag's stored value (set through the Features API or seeded): undefined when none is
 * stored, false when what is stored does not read as `true`.
 */
export function storedFeatureFlag(db: Db, name: string): boolean | undefined {
  const row = statements(db).feature.get(name);
  if (!row) return undefined;
  try {
    return JSON.parse(row.value) === true;
  } catch {
    return false;
  }
}

/** The last settings text isAdminModeOn parsed, and its answer: every admin request asks, the text rarely changes. */
let adminModeMemo: { text: string; on: boolean } | undefined;

/** The application setting `admin_mode` (kept in meta by the settings API). */
export function isAdminModeOn(db: Db): boolean {
  const row = statements(db).settings.get();
  if (!row) return false;
  if (adminModeMemo?.text === row.value) return adminModeMemo.on;
  let on = false;
  try {
    on = (JSON.parse(row.value) as { admin_mode?: unknown }).admin_mode === true;
  } catch {
    on = false;
  }
  adminModeMemo = { text: row.value, on };
  return on;
}

/** The credential's scopes; a malformed column counts as no scope at all. */
export function credentialScopes(cred: CredentialRow): string[] {
  try {
    const v = JSON.parse(cred.scopes) as unknown;
    return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
  } catch {
    return [];
  }
}

/** The credential's `extra` JSON object (job status, deploy username ...). */
export function credentialExtra(cred: CredentialRow): Record<string, unknown> {
  try {
    const v = JSON.parse(cred.extra) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * When the credential stops working, in ms since the epoch, or null. `expires_at_ms` (OAuth) is
 * exact; a date `expires_at` ends at the start of that day, UTC, as GitLab's `expires_at <= now`.
 */
export function expiryMs(cred: CredentialRow): number | null {
  if (cred.expires_at_ms !== null) return cred.expires_at_ms;
  if (!cred.expires_at) return null;
  const ms = Date.parse(`${cred.expires_at.slice(0, 10)}T00:00:00Z`);
  return Number.isNaN(ms) ? null : ms;
}
