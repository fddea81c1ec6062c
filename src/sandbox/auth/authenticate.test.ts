// authenticate() against a real seeded state for rule combinations no HTTP route of this module has
// (user-level writes, explicit write/read overrides, job tokens on write routes).
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestContext } from '../http/context.js';
import { SandboxHttpError } from '../http/errors.js';
import type { RunningSandbox } from '../index.js';
import { startSandbox } from '../index.js';
import type { AuthRule } from '../http/router.js';
import { loadSeed } from '../seed.js';
import { authenticate, hasPreviousPrefix } from './authenticate.js';

let sb: RunningSandbox;
beforeAll(async () => {
  const seed = structuredClone(loadSeed());
  seed.inventory = {};
  sb = await startSandbox({ seed });
});
afterAll(async () => {
  await sb.close();
});

function run(
  method: string,
  rule: AuthRule,
  headers: IncomingHttpHeaders,
  input: Record<string, unknown> = {},
): string {
  const ctx: RequestContext = {
    method,
    path: '/api/v4/x',
    url: new URL('http://sandbox/api/v4/x'),
    query: new URLSearchParams(),
    headers,
    input,
    params: {},
    caller: null,
    origin: 'http://sandbox',
    state: sb.state,
  };
  try {
    const caller = authenticate(ctx, rule);
    return caller
      ? `${caller.method}:${caller.user.username}${caller.sudo ? `(by ${caller.tokenOwner.username})` : ''}`
      : 'anonymous';
  } catch (err) {
    if (err instanceof SandboxHttpError)
      return `${err.status}${(err.body as { scope?: string }).scope ? ` ${(err.body as { scope: string }).scope}` : ''}`;
    throw err;
  }
}

const READ_API = { 'private-token': 'glpat-sandbox-root-read-api-0002' };
const API = { 'private-token': 'glpat-sandbox-alice-api-00000006' };
const JOB = { 'job-token': 'glcbt-sandbox-job-project-1-0001' };
const SESSION = { cookie: '_service_session=sandbox-session-alice-0001' };

describe('authenticate rules', () => {
  it.each([
    ['read_api on a user GET', 'GET', { level: 'user' }, READ_API, 'private_token:root'],
    ['read_api on a user HEAD', 'HEAD', { level: 'user' }, READ_API, 'private_token:root'],
    ['read_api on a user POST', 'POST', { level: 'user' }, READ_API, '403 api'],
    ['read_api on a user PUT', 'PUT', { level: 'user' }, READ_API, '403 api'],
    ['read_api on a POST marked read', 'POST', { level: 'user', write: false }, READ_API, 'private_token:root'],
    ['read_api on a GET marked write', 'GET', { level: 'user', write: true }, READ_API, '403 api'],
    ['api on a user DELETE', 'DELETE', { level: 'user' }, API, 'private_token:alice'],
    ['read_api on a public GET', 'GET', { level: 'public' }, READ_API, 'private_token:root'],
    ['nothing on a public POST', 'POST', { level: 'public' }, {}, 'anonymous'],
    ['job token on a job write route', 'POST', { level: 'user', jobToken: true }, JOB, 'job_token:alice'],
    ['job token on a public job route', 'GET', { level: 'public', jobToken: true }, JOB, 'job_token:alice'],
    ['session on a user write', 'PUT', { level: 'user' }, SESSION, 'session:alice'],
    ['anything on a none route', 'GET', { level: 'none' }, { 'private-token': 'glpat-bogus' }, 'anonymous'],
    [
      'private token wins over a session',
      'GET',
      { level: 'user' },
      { ...API, cookie: '_service_session=sandbox-session-root-0001' },
      'private_token:alice',
    ],
    [
      'a PAT through Bearer',
      'GET',
      { level: 'user' },
      { authorization: 'Bearer glpat-sandbox-alice-api-00000006' },
      'private_token:alice',
    ],
    [
      'an invalid private token does not fall back to a session',
      'GET',
      { level: 'user' },
      { 'private-token': 'glpat-bogus', ...SESSION },
      '401',
    ],
    [
      'sudo records who acted',
      'GET',
      { level: 'user' },
      { 'private-token': 'glpat-sandbox-root-api-sudo-0001', sudo: 'bob' },
      'private_token:bob(by root)',
    ],
  ] as const)('%s', (_name, method, rule, headers, expected) => {
    expect(run(method, rule as AuthRule, headers as IncomingHttpHeaders)).toBe(expected);
  });

  it('takes access_token from the parameters', () => {
    expect(run('GET', { level: 'user' }, {}, { access_token: 'sandbox-oauth-access-root-0001' })).toBe('oauth:root');
    // Bearer is read before the access_token parameter.
    expect(
      run(
        'GET',
        { level: 'user' },
        { authorization: 'Bearer glpat-sandbox-alice-api-00000006' },
        { access_token: 'sandbox-oauth-access-root-0001' },
      ),
    ).toBe('private_token:alice');
  });
});

describe('hasPreviousPrefix', () => {
  const config = { ...sbConfig(), personal_access_token_prefix: 'acme-new-', previous_prefixes: ['acme-', 'old-', ''] };
  it('refuses old prefixes unless the value carries the current or default one', () => {
    expect(hasPreviousPrefix(config, 'acme-123')).toBe(true);
    expect(hasPreviousPrefix(config, 'old-123')).toBe(true);
    expect(hasPreviousPrefix(config, 'acme-new-123')).toBe(false);
    expect(hasPreviousPrefix(config, 'glpat-123')).toBe(false);
    expect(hasPreviousPrefix(config, 'other-123')).toBe(false);
  });
});

function sbConfig() {
  return {
    version: '17.11.0',
    tier: 'ultimate' as const,
    storages: ['default'],
    unreachable: [],
    personal_access_token_prefix: 'glpat-',
    previous_prefixes: [],
    impersonation_enabled: true,
    oauth_ttl_seconds: 7200,
    edition: 'ee' as const,
    unlistable: [],
  };
}
