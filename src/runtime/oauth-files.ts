/**
 * OAuth refresh write-back. A refresh invalidates the old pair, so when the plan read the tokens
 * from files (`instance.oauth.access_token_file` / `refresh_token_file`, relative to the plan's
 * directory) the new pair is written back there, atomically (temp file + rename, mode 0600):
 * a crash after a refresh then resumes with tokens that still work.
 */
import { readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';
import { expandVars } from '../plan/expand.js';

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
    return path.missing.length === 0 && path.value.trim() !== '' ? writableTarget(resolve(dirname(planFile), path.value.trim())) : null;
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
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${value}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}
