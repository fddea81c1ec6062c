/**
 * `shardmove token inspect|revoke [--plan FILE] [--token-file FILE] [--json] [--show-new-value]`:
 * the admin token endpoint for operators. The token to act on comes from standard input or a file,
 * never from argv (argv is visible to every user of the machine through `ps`). The admin credential
 * comes from the plan's `instance` section, or from GITLAB_URL and GITLAB_TOKEN.
 *
 * Neither the token nor a reset token's new value is printed, logged or written anywhere, except
 * the new value when the operator asks for it with --show-new-value.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { CredentialProvider } from '../api/auth.js';
import { createStaticTokenProvider } from '../api/auth.js';
import type { ApiClient } from '../api/client.js';
import { createClient } from '../api/client.js';
import { ApiHttpError, isApiError } from '../api/errors.js';
import type { Release, TokenInfo } from '../api/tokens.js';
import {
  FINDER_FLAG,
  REVOKE_FLAG,
  TOKEN_TYPES,
  atLeast,
  createTokenApi,
  isRouteNotFound,
  parseRelease,
  tokenFamily,
  typeInfo,
} from '../api/tokens.js';
import { loadPlan } from '../plan/load.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';
import type { TokenCommandCode } from './errors.js';
import { ArgsError, TokenCommandError } from './errors.js';

export interface TokenCommandOptions {
  action: 'inspect' | 'revoke';
  plan?: string;
  tokenFile?: string;
  json: boolean;
  showNewValue?: boolean;
}

/** Standard input as the command sees it (a pipe, a file, or a terminal). */
export type TokenInput = NodeJS.ReadableStream & { isTTY?: boolean };

const ACTION_DONE = { revoke: 'revoked', reset: 'reset', delete: 'deleted', none: 'left as it is' } as const;

export async function runTokenCommand(
  opts: TokenCommandOptions,
  ctx: CommandContext & { stdin?: TokenInput },
): Promise<number> {
  const token = await readToken(opts, ctx);
  const { client, where } = await adminClient(opts, ctx);
  try {
    const prefix = await currentAccessPrefix(client);
    const api = createTokenApi(client, prefix);
    const family = tokenFamily(token, prefix)?.family ?? null;
    const explain = (err: unknown, method: 'POST' | 'DELETE') =>
      explainError(err, { client, method, family, token, prefix, where });
    let info: TokenInfo;
    try {
      info = await api.inspect(token);
    } catch (err) {
      throw await explain(err, 'POST');
    }
    if (opts.action === 'inspect') {
      ctx.stdout.write(opts.json ? `${JSON.stringify(infoJson(info), null, 2)}\n` : renderInfo(info));
      return EXIT.ok;
    }
    let answer: { status: number; body: unknown };
    try {
      answer = await api.revoke(token);
    } catch (err) {
      throw await explain(err, 'DELETE');
    }
    const after = await api.inspect(token).then(
      (i) => i.state,
      (err: unknown) =>
        err instanceof ApiHttpError && err.status === 404 && !isRouteNotFound(err) ? 'gone' : 'unknown',
    );
    const newValue = newValueOf(answer.body);
    const out = {
      action: info.action,
      done: ACTION_DONE[info.action],
      type: info.type,
      kind: info.kind,
      id: info.id,
      owner: info.owner,
      /** What a second look at the old value found: `revoked`, `expired`, `gone` (reset or deleted) ... */
      old_value_now: after,
      new_value_returned: newValue !== null,
      ...(opts.showNewValue && newValue !== null ? { new_value: newValue } : {}),
    };
    if (opts.json) ctx.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    else ctx.stdout.write(renderRevoke(info, after, newValue, opts.showNewValue === true));
    return EXIT.ok;
  } finally {
    await client.close();
  }
}

/** The token from --token-file or standard input: one line, trimmed; a terminal is refused (it would echo). */
async function readToken(opts: TokenCommandOptions, ctx: CommandContext & { stdin?: TokenInput }): Promise<string> {
  let text: string;
  if (opts.tokenFile) {
    try {
      text = await readFile(resolve(ctx.cwd, opts.tokenFile), 'utf8');
    } catch (err) {
      throw new ArgsError(
        `token: cannot read --token-file ${opts.tokenFile} (${(err as { code?: string }).code ?? 'error'})`,
      );
    }
  } else {
    const stdin = ctx.stdin;
    if (!stdin || stdin.isTTY)
      throw new ArgsError(
        'token: give the token on standard input (e.g. `shardmove token inspect < file`) or with --token-file; never as an argument',
      );
    const chunks: Buffer[] = [];
    for await (const c of stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
    text = Buffer.concat(chunks).toString('utf8');
  }
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (lines.length === 0)
    throw new ArgsError(`token: ${opts.tokenFile ? `--token-file ${opts.tokenFile}` : 'standard input'} is empty`);
  if (lines.length > 1) throw new ArgsError(`token: expected one token, got ${lines.length} lines`);
  return lines[0]!;
}

/** The client for the admin credential: the plan's instance section, or GITLAB_URL + GITLAB_TOKEN. */
async function adminClient(
  opts: TokenCommandOptions,
  ctx: CommandContext,
): Promise<{ client: ApiClient; where: string }> {
  let baseUrl: string;
  let credentials: CredentialProvider;
  let sudo: string | null = null;
  let timeoutMs = 30_000;
  let where: string;
  if (opts.plan) {
    const { plan } = await loadPlan(opts.plan, { env: ctx.env, cwd: ctx.cwd });
    baseUrl = plan.instance.url;
    sudo = plan.instance.sudo;
    timeoutMs = plan.instance.timeoutMs;
    const c = plan.instance.credentials;
    // OAuth: the access token as it is. A refresh would spend the plan's single-use refresh token.
    credentials = c.type === 'token' ? createStaticTokenProvider(c.token) : bearer(c.accessToken);
    where = `the instance of ${opts.plan}`;
  } else {
    const url = ctx.env.GITLAB_URL?.trim();
    const admin = ctx.env.GITLAB_TOKEN?.trim();
    if (!url || !admin)
      throw new ArgsError(
        "token: name the instance with --plan FILE, or set GITLAB_URL and GITLAB_TOKEN (an administrator's token)",
      );
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
    } catch {
      throw new ArgsError('token: GITLAB_URL is not an http:// or https:// URL');
    }
    baseUrl = url.replace(/\/+$/, '').replace(/\/api\/v4$/, '');
    credentials = createStaticTokenProvider(admin);
    where = 'GITLAB_URL';
  }
  return {
    client: createClient({ baseUrl, credentials, sudo, timeoutMs, signal: ctx.signal, retry: { maxAttempts: 3 } }),
    where,
  };
}

function bearer(token: string): CredentialProvider {
  return {
    headers: () => Promise.resolve({ authorization: `Bearer ${token}` }),
    onUnauthorized: () => Promise.resolve(false),
    secrets: () => [token],
  };
}

/** The instance's current custom personal access token prefix, when the settings say one. */
async function currentAccessPrefix(client: ApiClient): Promise<string | null> {
  try {
    const body = (await client.request({ method: 'GET', path: '/application/settings' })).body as Record<
      string,
      unknown
    > | null;
    const p = body?.['personal_access_token_prefix'];
    return typeof p === 'string' && p !== '' ? p : null;
  } catch (err) {
    if (isApiError(err)) return null;
    throw err;
  }
}

async function instanceRelease(client: ApiClient): Promise<{ version: string; release: Release | null }> {
  for (const path of ['/metadata', '/version']) {
    try {
      const v = ((await client.request({ method: 'GET', path })).body as Record<string, unknown> | null)?.['version'];
      if (typeof v === 'string') return { version: v, release: parseRelease(v) };
    } catch (err) {
      if (!isApiError(err)) throw err;
    }
  }
  return { version: 'an unknown version', release: null };
}

const show = (r: Release) => `${r[0]}.${r[1]}`;

/** Turns an endpoint failure into what the operator can do about it; other errors pass through. */
async function explainError(
  err: unknown,
  c: {
    client: ApiClient;
    method: 'POST' | 'DELETE';
    family: string | null;
    token: string;
    prefix: string | null;
    where: string;
  },
): Promise<unknown> {
  if (!(err instanceof ApiHttpError)) return err;
  const what = c.method === 'POST' ? 'inspect' : 'revoke';
  const label = c.family ? `${typeInfo(c.family).label}s` : 'tokens of this type';
  const { version, release } = await instanceRelease(c.client);
  const fail = (code: TokenCommandCode, message: string) => new TokenCommandError(code, `token ${what}: ${message}`);
  if (isRouteNotFound(err)) {
    if (release && !atLeast(release, [17, 5]))
      return fail(
        'SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE',
        `the instance runs ${version}; the admin token endpoint came in 17.5`,
      );
    if (release && !atLeast(release, [17, 8])) {
      return fail(
        'SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE',
        `the instance runs ${version}, where the admin token endpoint is behind the feature flag ${FINDER_FLAG}, which is off: an administrator can turn it on (POST /api/v4/features/${FINDER_FLAG} with value=true), or upgrade to 17.8`,
      );
    }
    return fail('SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE', `the instance (${version}) has no /api/v4/admin/token route`);
  }
  if (err.status === 405)
    return fail(
      'SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE',
      `the instance runs ${version}; DELETE /admin/token came in 17.7 (inspect works)`,
    );
  if (err.status === 404 && /feature flag is disabled/.test(err.gitlabMessage ?? '')) {
    return fail(
      'SHARDMOVE_TOKEN_ENDPOINT_UNAVAILABLE',
      `the instance runs ${version}, where DELETE /admin/token is behind the feature flag ${REVOKE_FLAG}, which is off: an administrator can turn it on (POST /api/v4/features/${REVOKE_FLAG} with value=true)`,
    );
  }
  if (err.status === 404) {
    return fail(
      'SHARDMOVE_TOKEN_NOT_FOUND',
      `no such token (404): the instance knows no ${c.family ? typeInfo(c.family).label : 'token'} with this value (a reset or deleted token is gone; a job token is found only while its job runs)`,
    );
  }
  if (err.status === 403)
    return fail(
      'SHARDMOVE_TOKEN_FORBIDDEN',
      `the admin credential (${c.where}) is not an administrator's, or lacks the scope Admin Mode needs (403${err.gitlabMessage ? `: ${err.gitlabMessage}` : ''})`,
    );
  if (err.status === 422) return fail('SHARDMOVE_TOKEN_UNSUPPORTED', unsupported(c, label, version, release));
  return err;
}

function unsupported(
  c: { method: 'POST' | 'DELETE'; family: string | null; token: string; prefix: string | null },
  label: string,
  version: string,
  release: Release | null,
): string {
  if (!c.family) {
    const own = /^([A-Za-z][A-Za-z0-9]{0,15}-)/.exec(c.token)?.[1];
    const current = `glpat-${c.prefix ? ` or the current custom prefix ${c.prefix}` : ''}`;
    if (own) {
      return (
        `the token type is not supported (422): it starts with "${own}", which is not ${current}. A personal, project or group access token minted under a ` +
        "previous custom prefix cannot be inspected or revoked through this endpoint; revoke it in the owner's access token settings"
      );
    }
    return `the token type is not supported (422): its prefix is none of ${TOKEN_TYPES.length} types the endpoint knows`;
  }
  const info = typeInfo(c.family);
  if (c.method === 'POST' && release && !atLeast(release, info.postSince))
    return `the token type is not supported (422): ${label} are identified from ${show(info.postSince)}; the instance runs ${version}`;
  if (c.method === 'DELETE') {
    if (info.deleteSince === null)
      return `the token type is not supported (422): ${label} cannot be revoked through this endpoint (the spec lists no action); it stops working when its job ends`;
    if (release && !atLeast(release, info.deleteSince))
      return `the token type is not supported (422): DELETE acts on ${label} from ${show(info.deleteSince)}; the instance runs ${version}`;
    if (info.deleteFlag)
      return `the token type is not supported (422): DELETE of ${label} needs the feature flag ${info.deleteFlag}, off by default (POST /api/v4/features/${info.deleteFlag} with value=true)`;
  }
  return `the token type is not supported (422) by this instance (${version})`;
}

/** A reset's new value, if the answer carried one (GitLab's DELETE answers 204 No Content: none). */
function newValueOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null;
  const b = body as Record<string, unknown>;
  for (const k of ['token', 'new_token', 'value']) if (typeof b[k] === 'string' && b[k] !== '') return b[k] as string;
  return null;
}

/** The record without anything that holds (part of) a token value. */
function infoJson(info: TokenInfo): Record<string, unknown> {
  const { token: _token, ...record } = info.record;
  return {
    type: info.type,
    kind: info.kind,
    id: info.id,
    owner: info.owner,
    scopes: info.scopes,
    expires_at: info.expiresAt,
    last_used_at: info.lastUsedAt,
    state: info.state,
    action_on_revoke: info.action,
    record,
  };
}

function renderInfo(info: TokenInfo): string {
  const rows: Array<[string, string]> = [
    ['type', info.type],
    ['owner', info.owner ?? '-'],
    ['id', info.id === null ? '-' : String(info.id)],
    ['scopes', info.scopes === null ? '-' : info.scopes.join(', ') || '(none)'],
    [
      'expires',
      info.expiresAt ??
        (info.kind === 'personal' ||
        info.kind.endsWith('_access') ||
        info.kind === 'impersonation' ||
        info.kind === 'deploy'
          ? 'never'
          : '-'),
    ],
    [
      'last used',
      info.lastUsedAt ??
        (['personal', 'impersonation', 'project_access', 'group_access', 'cluster_agent', 'pipeline_trigger'].includes(
          info.kind,
        )
          ? 'never'
          : '-'),
    ],
    ['state', info.state],
    ['on revoke', info.action === 'none' ? 'no action (cannot be revoked here)' : info.action],
  ];
  return rows.map(([k, v]) => `${k.padEnd(10)} ${v}`).join('\n') + '\n';
}

function renderRevoke(info: TokenInfo, after: string, newValue: string | null, showNew: boolean): string {
  const who = `${info.type}${info.owner ? ` of ${info.owner}` : ''}${info.id !== null ? ` (id ${info.id})` : ''}`;
  const lines = [`${ACTION_DONE[info.action]}: ${who}`];
  if (info.action === 'revoke')
    lines.push(`the token no longer authenticates (the instance now reports it ${after === 'gone' ? 'gone' : after})`);
  if (info.action === 'delete') lines.push(`the session is deleted (the instance now reports it ${after})`);
  if (info.action === 'reset') {
    lines.push(
      `the old value no longer works (the instance now reports it ${after}); a new value was issued to the owner`,
    );
    if (showNew)
      lines.push(
        newValue !== null
          ? `new value: ${newValue}`
          : 'new value: not returned by the instance (DELETE /admin/token answers 204 No Content); the owner reads it in their settings',
      );
    else if (newValue !== null)
      lines.push('the instance returned the new value; it is not shown (--show-new-value shows it)');
  }
  return lines.join('\n') + '\n';
}
