/**
 * OAuth refresh write-back. A refresh invalidates the old pair, so when the plan read the tokens
 * from files (`instance.oauth.access_token_file` / `refresh_token_file`, relative to the plan's
 * directory) the new pair is written back there, atomically (temp file + rename, mode 0600):
 * a crash after a refresh then resumes with tokens that still work.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { writeFileAtomic } from '../../files/atomic.js';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';
import { expandVars } from '../../plan/expand.js';
import type { Plan } from '../../plan/types.js';
import type { SecretSet } from '../observe/logger.js';
import type { RefreshedTokens } from '../types.js';

/** What the run hands the client for refreshes, and the warning to give when nothing can be written back. */
export interface OauthWriteback {
  onRefresh(tokens: RefreshedTokens): void;
  /** Set when the tokens do not come from files: a refreshed pair then lives in memory only. */
  warning: string | null;
}

/** What the writeback logs to: a run's logger, or one that opens its file on the first line. */
export interface WritebackLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * The refresh handler of a run: every new pair joins the secrets the logger redacts and, when the
 * plan read the tokens from files, is written back there. A failed write is logged, not thrown: the
 * run goes on with the pair in memory. Token credentials never refresh (no-op handler).
 */
export function createOauthWriteback(
  planFile: string,
  env: Readonly<Record<string, string | undefined>>,
  plan: Plan,
  secrets: SecretSet,
  log: WritebackLog,
): OauthWriteback {
  if (plan.instance.credentials.type !== 'oauth') return { onRefresh: () => undefined, warning: null };
  const files = findOauthFiles(planFile, env);
  const warning =
    files.accessTokenFile && files.refreshTokenFile
      ? null
      : 'the OAuth tokens do not come from access_token_file/refresh_token_file: refreshed tokens are kept in memory only, so a crash or kill will need fresh tokens to resume';
  const onRefresh = (tokens: RefreshedTokens) => {
    secrets.add(tokens.accessToken, tokens.refreshToken);
    try {
      if (files.accessTokenFile) writeSecretFile(files.accessTokenFile, tokens.accessToken);
      if (files.refreshTokenFile) writeSecretFile(files.refreshTokenFile, tokens.refreshToken);
      log.info({ written: Boolean(files.accessTokenFile && files.refreshTokenFile) }, 'oauth tokens refreshed');
    } catch (err) {
      log.error({ err }, 'could not write refreshed oauth tokens back to their files');
    }
  };
  return { onRefresh, warning };
}

/** The plan's OAuth token files (absolute paths), null where a token is not read from a file. */
export interface OauthFiles {
  accessTokenFile: string | null;
  refreshTokenFile: string | null;
}

/**
 * Which OAuth token fields of the plan came from files (absolute paths), read from the plan's YAML.
 * A path may use ${VAR}, as the loader allows: it is expanded from the same environment.
 */
export function findOauthFiles(planFile: string, env: Readonly<Record<string, string | undefined>>): OauthFiles {
  let doc: unknown;
  try {
    doc = parse(readFileSync(planFile, 'utf8'));
  } catch {
    return { accessTokenFile: null, refreshTokenFile: null };
  }
  const oauth = (doc as { instance?: { oauth?: Record<string, unknown> } } | null)?.instance?.oauth;
  const pick = (key: string): string | null => {
    const v = oauth?.[key];
    if (typeof v !== 'string') return null;
    const path = expandVars(v, env);
    return path.missing.length === 0 && path.value.trim() !== ''
      ? writableTarget(resolve(dirname(planFile), path.value.trim()))
      : null;
  };
  return { accessTokenFile: pick('access_token_file'), refreshTokenFile: pick('refresh_token_file') };
}

/**
 * Where a refreshed token may be written: the real path of a regular file (a symlinked token file
 * is updated where it lives), never a pipe or device such as /dev/stdin, which a rename would replace.
 */
function writableTarget(file: string): string | null {
  try {
    return statSync(file).isFile() ? realpathSync(file) : null;
  } catch {
    return null;
  }
}

/** Replaces `file`'s content atomically with `value` (owner-only permissions). */
export function writeSecretFile(file: string, value: string): void {
  writeFileAtomic(file, `${value}\n`, { mode: 0o600 });
}
