/**
 * instance.token | instance.token_file | instance.oauth: how the run authenticates. Secret values
 * come from ${VAR} or from a file next to the plan, never from the plan text itself, and are kept
 * only in memory (and in the redaction list, so no message can repeat them).
 */
import { codeOf } from '../shared/errors.js';
import { resolve } from 'node:path';
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import type { Credentials } from './values.js';
import { expandVars } from './expand.js';
import type { Entry, Pos, Reader } from './reader.js';

/** Fields of instance.oauth; each may also be written as <field>_file. */
export const OAUTH_FIELDS = ['access_token', 'refresh_token', 'client_id', 'client_secret', 'redirect_uri'] as const;
/** OAuth fields whose values are secrets (client_id and redirect_uri are public identifiers). */
export const OAUTH_SECRETS: ReadonlySet<string> = new Set(['access_token', 'refresh_token', 'client_secret']);

export const OAUTH_KEYS: readonly string[] = OAUTH_FIELDS.flatMap((f) => [f, `${f}_file`]);

const HOW = 'secrets come from the environment or a file: write ${VAR} or use';

/**
 * Reads one credential field written either as `field` (${VAR}, or a literal when not secret) or
 * `field_file` (a path relative to the plan's directory). Undefined when neither is set or it failed.
 */
function readValue(
  r: Reader,
  entries: Map<string, Entry>,
  field: string,
  path: string,
  secret: boolean,
): { value?: string; given: boolean } {
  const direct = entries.get(field);
  const file = entries.get(`${field}_file`);
  const hasDirect = direct !== undefined && !r.isNull(direct.value);
  const hasFile = file !== undefined && !r.isNull(file.value);
  if (hasDirect && hasFile) {
    r.error(`${path}_file`, r.posOf(file.key), `set either ${field} or ${field}_file, not both`);
    return { given: true };
  }
  if (hasDirect) return { value: readDirect(r, direct.value!, path, field, secret), given: true };
  if (hasFile) return { value: readFromFile(r, file.value!, `${path}_file`, secret), given: true };
  return { given: false };
}

function readDirect(r: Reader, node: Node, path: string, field: string, secret: boolean): string | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  if (secret) {
    const raw = isScalar(node) ? node.value : undefined;
    const onlyRefs = typeof raw === 'string' && expandVars(raw, {}).onlyRefs;
    if (!onlyRefs) {
      // Never echo the value: it may be a real token.
      r.error(path, at, `a literal secret is not allowed: ${HOW} ${field}_file`);
      if (node.range) r.secretRanges.push([node.range[0], node.range[2]]);
      return undefined;
    }
  }
  if (!r.resolveSecrets) return '';
  const s = r.string(node, path);
  if (!s) return undefined;
  if (s.value.trim() === '') {
    r.error(path, at, 'is empty (the environment variable is set but empty)');
    return undefined;
  }
  if (secret) r.secrets.push(s.value);
  return s.value;
}

function readFromFile(r: Reader, node: Node, path: string, secret: boolean): string | undefined {
  const at = r.posOf(node);
  r.mark(path, at);
  if (!r.resolveSecrets) return '';
  const s = r.string(node, path);
  if (!s) return undefined;
  const abs = resolve(r.baseDir, s.value);
  r.secretFiles[path] = abs;
  let got: { text: string; mode: number } | undefined;
  try {
    got = r.readFile(abs);
  } catch (err) {
    const code = codeOf(err) ?? 'error';
    r.error(path, at, `cannot read ${abs} (${code})`);
    return undefined;
  }
  if (got === undefined) {
    r.error(path, at, `file not found: ${abs} (paths are relative to the plan's directory)`);
    return undefined;
  }
  const value = got.text.trim();
  if (value === '') {
    r.error(path, at, `file is empty: ${abs}`);
    return undefined;
  }
  if (secret) r.secrets.push(value);
  if (secret && (got.mode & 0o044) !== 0) r.warn(path, at, `${abs} is readable by group or others; chmod 600 it`);
  return value;
}

/** A secret written as `field` (${VAR} only) or `field_file`, or neither (`given` false). */
export function readOptionalSecret(
  r: Reader,
  entries: Map<string, Entry>,
  field: string,
  path: string,
): { value?: string; given: boolean } {
  return readValue(r, entries, field, path, true);
}

/** Reads the credentials out of the instance mapping; reports none-or-several and missing parts. */
export function readCredentials(r: Reader, instance: Map<string, Entry>, instancePos: Pos): Credentials | undefined {
  const set = ['token', 'token_file', 'oauth'].filter((k) => {
    const e = instance.get(k);
    return e !== undefined && !r.isNull(e.value);
  });
  if (set.length === 0) {
    r.error('instance', instancePos, 'missing credentials: set one of token (${VAR}), token_file or oauth');
    return undefined;
  }
  if (set.length > 1) {
    const second = instance.get(set[1]!)!;
    r.error(
      `instance.${set[1]}`,
      r.posOf(second.key),
      `set exactly one of token, token_file, oauth (found ${set.join(' and ')})`,
    );
    return undefined;
  }
  if (set[0] !== 'oauth') {
    const got = readValue(r, instance, 'token', 'instance.token', true);
    return got.value === undefined ? undefined : { type: 'token', token: got.value };
  }
  const node = instance.get('oauth')!;
  const entries = r.map(node.value, 'instance.oauth', OAUTH_KEYS);
  if (!entries) return undefined;
  const oauthPos = r.posOf(node.value);
  r.mark('instance.oauth', oauthPos);
  const values: Record<string, string> = {};
  let ok = true;
  for (const field of OAUTH_FIELDS) {
    const path = `instance.oauth.${field}`;
    const got = readValue(r, entries, field, path, OAUTH_SECRETS.has(field));
    if (!got.given) r.error(path, oauthPos, `missing: set ${field} or ${field}_file`);
    if (got.value === undefined) ok = false;
    else values[field] = got.value;
  }
  if (!ok) return undefined;
  return {
    type: 'oauth',
    accessToken: values.access_token!,
    refreshToken: values.refresh_token!,
    clientId: values.client_id!,
    clientSecret: values.client_secret!,
    redirectUri: values.redirect_uri!,
  };
}
