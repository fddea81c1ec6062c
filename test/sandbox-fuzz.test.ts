// Property tests over real HTTP (bad input): arbitrary paths (the router's own templates
// with random segments and encodings, and free-form ones), methods, credential headers, Sudo,
// cookies, content types, query strings and JSON, form or garbage bodies. Properties: never a 5xx
// (no faults are injected here), every error is JSON, a refused request or a read changes nothing,
// a request without an administrator's credential changes nothing, and the stored state stays
// consistent. Under injected faults, the only 5xx is the fault's 503 and no faulted request has an effect.
// The per-route suites (sandbox-bad-input-inventory, sandbox-tokens, sandbox-writes) fuzz the
// parameters of their routes; this file fuzzes everything at once, including the routing and
// authentication layers.
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { createRouter, startSandbox } from '../src/sandbox/index.js';
import { changeCount, markCredentialsUsed } from './support/sandbox-snapshot.js';
import { realTimersAt } from './support/fake-clock.js';
import { assertProperty } from './support/property.js';

const ROOT = 'glpat-sandbox-root-api-sudo-0001';
const ROOT_ADMIN_MODE = 'glpat-sandbox-root-admin-mode-03';
const ROOT_OAUTH = 'sandbox-oauth-access-root-0001';
const ROOT_SESSION = 'sandbox-session-root-0001';
const ROOT_REFRESH = 'sandbox-oauth-refresh-root-0001';
/** Every credential that acts with administrator rights in the default seed, and the refresh token (a refresh rightly changes state). */
const ADMIN_CREDENTIALS = [ROOT, ROOT_ADMIN_MODE, ROOT_OAUTH, ROOT_SESSION, ROOT_REFRESH];
const OTHER_CREDENTIALS = [
  'glpat-sandbox-root-read-api-0002',
  'glpat-sandbox-root-expired-00004',
  'glpat-sandbox-root-revoked-00005',
  'glpat-sandbox-alice-api-00000006',
  'acme-sandbox-root-old-prefix-007',
  'glpat-sandbox-impersonate-alice8',
  'glpat-sandbox-project-1-bot-0009',
  'glpat-sandbox-group-1-bot-000010',
  'sandbox-session-alice-0001',
  'glcbt-sandbox-job-project-1-0001',
  'gldt-sandbox-deploy-0001',
  'glft-sandbox-feed-alice-0001',
  'glrt-sandbox-runner-0001',
  'glptt-sandbox-trigger-0001',
  'glffct-sandbox-ffclient-0001',
  'glimt-sandbox-incoming-alice-01',
];

/** Header values Node will send: printable ASCII only. */
const printable = (max: number) => fc.string({ maxLength: max }).map((s) => s.replace(/[^\x20-\x7e]/g, ''));
const credential = fc.oneof(
  fc.constantFrom(...ADMIN_CREDENTIALS, ...OTHER_CREDENTIALS),
  printable(30),
  fc.constantFrom('', ' ', 'glpat-', 'null', '0'),
);
const sudoValue = fc.oneof(
  fc.constantFrom('root', 'ROOT', 'alice', 'Alice', '1', '2', '4', '0', '-1', '999', 'ops-admin', ' root ', ''),
  printable(12),
);

const headers: fc.Arbitrary<Record<string, string | string[]>> = fc.record(
  {
    'private-token': fc.oneof(credential, fc.array(credential, { minLength: 2, maxLength: 2 })),
    authorization: fc.oneof(
      credential.map((t) => `Bearer ${t}`),
      credential.map((t) => `bearer  ${t} `),
      fc.constantFrom('Bearer', 'Basic Og==', 'Basic !!!'),
      credential.map((t) => `Basic ${Buffer.from(`sandbox-app-uid:${t}`).toString('base64')}`),
      printable(40),
    ),
    'job-token': credential,
    'deploy-token': credential,
    sudo: fc.oneof(sudoValue, fc.array(sudoValue, { minLength: 2, maxLength: 2 })),
    cookie: fc.oneof(
      credential.map((t) => `_service_session=${t}`),
      credential.map((t) => `a=b; _service_session="${t}"; _service_session=x`),
      fc.constantFrom('_service_session', '=;=;', '_service_session=%zz', '; ;'),
      printable(40),
    ),
    'content-type': fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/x-www-form-urlencoded',
      'text/plain',
      'multipart/form-data; boundary=x',
      'application/vnd.api+json',
      'application/xml',
      '',
      ';',
      'APPLICATION/JSON',
    ),
    accept: fc.constantFrom('*/*', 'text/html', 'application/json'),
  },
  { requiredKeys: [] },
);

/** Path segments: valid ids, encodings that decode to odd things, broken escapes, long numbers. */
const segment = fc.oneof(
  fc.constantFrom(
    '1',
    '2',
    '3',
    '17',
    '0',
    '-1',
    '1.5',
    '1e3',
    '99999999999999999999',
    '007',
    '%201',
    'group-1',
    'group-1%2Fproject-1',
    'group-1/project-1',
    '%',
    '%zz',
    '%00',
    '%2e%2e',
    '..',
    '.',
    'status',
    'all',
    '%E2%82%AC',
    '%C0%AF',
    'matrix_flag',
    'A_Flag',
    'x'.repeat(300),
  ),
  fc.nat().map(String),
  fc.string({ maxLength: 12 }).map((s) => encodeURIComponent(s)),
  fc.string({ maxLength: 12 }).map((s) => s.replace(/[^\x21-\x7e]/g, '').replace(/[?#]/g, '')),
);

const routes = createRouter().routes;
const validSegment = fc.constantFrom('1', '2', '3', '5', '17', '20', 'matrix_flag');
/** A route's own template with its parameters filled in: mostly real ids, sometimes anything. */
const templatePath = fc
  .tuple(
    fc.constantFrom(...routes),
    fc.array(fc.oneof({ weight: 3, arbitrary: validSegment }, { weight: 1, arbitrary: segment }), {
      minLength: 4,
      maxLength: 4,
    }),
    fc.constantFrom('', '', '', '/', '//'),
  )
  .map(([route, segs, tail]) => {
    let i = 0;
    return {
      method: route.method,
      path: route.pattern.replace(/:[a-z_]+/g, () => segs[i++ % segs.length] as string) + tail,
    };
  });
const freePath = fc
  .tuple(
    fc.constantFrom('/api/v4', '/api/v4/', '/API/V4', '/api', '', '/oauth', '/-'),
    fc.array(segment, { maxLength: 5 }),
  )
  .map(([prefix, segs]) => `${prefix}/${segs.join('/')}`);

const QUERY_KEYS = [
  'private_token',
  'access_token',
  'job_token',
  'sudo',
  'page',
  'per_page',
  'pagination',
  'order_by',
  'sort',
  'id_after',
  'repository_storage',
  'visibility',
  'search',
  'username',
  'token',
  'value',
  'all',
  'statistics',
  'source_storage_name',
  'destination_storage_name',
  'private_token[]',
  'sudo[]',
  'page[x]',
  'token[a][b]',
  '__proto__',
  'constructor[prototype]',
  '',
];
const queryValue = fc.oneof(
  fc.constantFrom(
    ...ADMIN_CREDENTIALS,
    ...OTHER_CREDENTIALS,
    'nfs-1',
    'cluster',
    'keyset',
    'id',
    '1',
    '0',
    '-1',
    '',
    'true',
  ),
  fc.string({ maxLength: 10 }),
);
const query = fc.oneof(
  fc
    .array(fc.tuple(fc.constantFrom(...QUERY_KEYS), queryValue), { maxLength: 5 })
    .map((pairs) => new URLSearchParams(pairs).toString()),
  fc.constantFrom('%', '&&&', '=', 'a=%zz', 'page=1&page=2', 'private_token', 'sudo=%00', '%5B%5D=1'),
);

/** Body keys any route reads, so the fuzzer reaches past parameter validation. `admin_mode` is left out: it would take the admin tokens' rights away for the rest of the run. */
const BODY_KEYS = [
  'token',
  'source_storage_name',
  'destination_storage_name',
  'value',
  'repository_storages_weighted',
  'branch',
  'commit_message',
  'actions',
  'content',
  'title',
  'files',
  'visibility',
  'format',
  'query',
  'variables',
  'grant_type',
  'refresh_token',
  'client_id',
  'ref',
  'private_token',
  'sudo',
  'access_token',
  'job_token',
  '__proto__',
  'constructor',
];
/** Tokens a body may name (revoke targets): not the ones the fuzzer authenticates with, so those keep working. */
const TOKEN_TARGETS = OTHER_CREDENTIALS.filter((t) => !t.includes('alice-api') && !t.includes('read-api'));
const bodyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    'nfs-1',
    'nfs-2',
    'default',
    'cluster',
    'main',
    'true',
    true,
    false,
    null,
    0,
    -1,
    1e308,
    '',
    ...TOKEN_TARGETS,
  ),
  fc.constant({ default: 100 }),
  fc.constant([{ action: 'create', file_path: 'a.txt', content: 'x' }]),
  fc.constant(
    'mutation { geoRegistriesBulkUpdate(input: { registryClass: PROJECT_REPOSITORY_REGISTRY, action: RESYNC_ALL }) { errors } }',
  ),
  fc.jsonValue({ maxDepth: 2 }),
);
const body = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(fc.constantFrom(...BODY_KEYS), bodyValue, { maxKeys: 4 }).map((o) => JSON.stringify(o)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc
    .array(
      fc.tuple(fc.constantFrom(...BODY_KEYS, 'actions[][action]', 'files[]', 'token[]'), fc.string({ maxLength: 10 })),
      { maxLength: 4 },
    )
    .map((pairs) => new URLSearchParams(pairs).toString()),
  fc.string({ maxLength: 80 }),
  fc.constantFrom('{', '{"token":', 'null', '[]', '"x"', '\u0000', '{"__proto__":{"admin":true}}', '{"a":1}{"b":2}'),
);
const anyMethod = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'FOO');

/** Where the request goes: mostly a real route with its own method, sometimes anything anywhere. */
const target = fc.oneof(
  { weight: 6, arbitrary: templatePath },
  { weight: 2, arbitrary: fc.tuple(templatePath, anyMethod).map(([t, m]) => ({ ...t, method: m })) },
  { weight: 1, arbitrary: fc.record({ method: anyMethod, path: freePath }) },
);
/** Writes with valid bodies on real items: whether they take effect must depend on the caller alone. */
const id = fc.integer({ min: 1, max: 25 }).map(String);
const validWrite = fc.oneof(
  fc
    .tuple(fc.constantFrom('project', 'snippet', 'group'), id, fc.constantFrom('cluster', 'nfs-1', 'default'))
    .map(([k, i, d]) => ({
      method: 'POST',
      path: `/api/v4/${k}s/${i}/repository_storage_moves`,
      body: { destination_storage_name: d },
    })),
  fc.constantFrom('project', 'snippet', 'group').map((k) => ({
    method: 'POST',
    path: `/api/v4/${k}_repository_storage_moves`,
    body: { source_storage_name: 'nfs-2', destination_storage_name: 'cluster' },
  })),
  id.map((i) => ({
    method: 'POST',
    path: `/api/v4/projects/${i}/repository/commits`,
    body: { branch: 'main', commit_message: 'm', actions: [{ action: 'create', file_path: 'a.txt', content: 'x' }] },
  })),
  id.map((i) => ({ method: 'PUT', path: `/api/v4/snippets/${i}`, body: { content: `c${i}`, title: 't' } })),
  id.map((i) => ({ method: 'POST', path: `/api/v4/groups/${i}/wikis`, body: { title: 'page', content: 'c' } })),
  fc.constantFrom(
    {
      method: 'PUT',
      path: '/api/v4/application/settings',
      body: { repository_storages_weighted: { default: 40, cluster: 60 } },
    },
    { method: 'POST', path: '/api/v4/features/fuzz_flag', body: { value: true } },
    { method: 'DELETE', path: '/api/v4/features/fuzz_flag', body: {} },
    {
      method: 'POST',
      path: '/api/graphql',
      body: {
        query:
          'mutation { geoRegistriesBulkUpdate(input: { registryClass: SNIPPET_REPOSITORY_REGISTRY, action: REVERIFY_ALL }) { errors } }',
      },
    },
    { method: 'DELETE', path: '/api/v4/admin/token', body: { token: 'glft-sandbox-feed-alice-0001' } },
    { method: 'DELETE', path: '/api/v4/admin/token', body: { token: 'glrt-sandbox-runner-0001' } },
  ),
);
/** Credentials: mostly one token the usual way (so requests get past authentication), sometimes a pile of odd headers. */
const requestHeaders = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(...ADMIN_CREDENTIALS.slice(0, 2))
      .map((t): Record<string, string | string[]> => ({ 'private-token': t })),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(...OTHER_CREDENTIALS)
      .map((t): Record<string, string | string[]> => ({ 'private-token': t })),
  },
  { weight: 1, arbitrary: fc.constant<Record<string, string | string[]>>({}) },
  { weight: 1, arbitrary: fc.record({ 'private-token': fc.constantFrom(ROOT), sudo: sudoValue }) },
  { weight: 2, arbitrary: headers },
);
/** Bodies some route accepts as they are, so valid requests by every kind of caller happen often. */
const validBody = fc
  .constantFrom<unknown>(
    { source_storage_name: 'nfs-1', destination_storage_name: 'cluster' },
    { source_storage_name: 'nfs-2' },
    { destination_storage_name: 'cluster' },
    {},
    { value: true },
    { value: 'false' },
    { token: 'glft-sandbox-feed-alice-0001' },
    { token: 'gldt-sandbox-deploy-0001' },
    { branch: 'main', commit_message: 'm', actions: [{ action: 'create', file_path: 'a.txt', content: 'x' }] },
    { content: 'x' },
    { title: 't' },
    { title: 'page', content: 'c' },
    { repository_storages_weighted: { default: 50, cluster: 50 } },
    { token: 'glrt-sandbox-runner-0001' },
    { token: 'glptt-sandbox-trigger-0001', ref: 'main' },
    {
      query:
        'mutation { geoRegistriesBulkUpdate(input: { registryClass: PROJECT_REPOSITORY_REGISTRY, action: RESYNC_ALL }) { errors } }',
    },
    {
      grant_type: 'refresh_token',
      refresh_token: ROOT_REFRESH,
      client_id: 'sandbox-app-uid',
      client_secret: 'gloas-sandbox-application-secret-0001',
    },
  )
  .map((o) => JSON.stringify(o));
/** A valid body and an admin token hidden under `__proto__`: neither may count as parameters. */
const protoBody = validBody.map(
  (b) => `{"__proto__": ${b.replace(/^\{/, `{"private_token": "${ROOT}", `).replace(/, \}$/, '}')}}`,
);
/** A JSON object of the keys routes read, sent as JSON: the shape most real requests have. */
const jsonBody = fc.dictionary(fc.constantFrom(...BODY_KEYS), bodyValue, { maxKeys: 4 }).map((o) => JSON.stringify(o));

interface Answer {
  status: number;
  type: string;
  text: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

function send(
  base: string,
  m: string,
  target: string,
  h: Record<string, string | string[]>,
  payload: string | undefined,
): Promise<Answer> {
  const { hostname, port } = new URL(base);
  // Without a length Node sends a DELETE or OPTIONS body bare, and the server would read it as the next request.
  const all = payload === undefined ? h : { ...h, 'content-length': String(Buffer.byteLength(payload)) };
  return new Promise((resolve, reject) => {
    const req = request(
      { host: hostname, port, method: m, path: target, headers: all, agent, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            type: String(res.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer to ${m} ${target}`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Whether an administrator credential is presented where the API reads credentials: the headers,
 * the query string, or a top-level credential parameter of the body. A token buried anywhere else
 * (say under `__proto__`) is not a credential, and a request carrying only such must change nothing.
 */
function carriesAdminCredential(
  url: string,
  h: Record<string, string | string[]>,
  payload: string | undefined,
): boolean {
  const places: unknown[] = [url, h['private-token'], h.authorization, h['job-token'], h.cookie];
  if (payload !== undefined) {
    try {
      const parsed: unknown = JSON.parse(payload);
      if (typeof parsed === 'object' && parsed !== null) {
        for (const k of ['private_token', 'access_token', 'job_token', 'refresh_token'])
          if (Object.hasOwn(parsed, k)) places.push((parsed as Record<string, unknown>)[k]);
      }
    } catch {
      // A form body: its pairs are parameters like the query's.
      places.push(payload);
    }
  }
  const text = JSON.stringify(places);
  return ADMIN_CREDENTIALS.some((c) => text.includes(c));
}

/** Invariants of the stored state that no request may break. */
function checkInvariants(sb: RunningSandbox): void {
  const db = sb.state.db;
  const storages = sb.state.config.storages;
  const badStorage = db
    .prepare(`SELECT kind, id, storage FROM items WHERE storage NOT IN (${storages.map(() => '?').join(', ')})`)
    .all(...storages);
  expect(badStorage).toEqual([]);
  // With the engine stopped, an item is read-only exactly when it has a move in flight, and never two.
  const doubled = db
    .prepare(
      `SELECT kind, item_id, count(*) n FROM moves WHERE state IN ('initial', 'scheduled', 'started', 'replicated')
    GROUP BY kind, item_id HAVING n > 1`,
    )
    .all();
  expect(doubled).toEqual([]);
  const orphanReadOnly = db
    .prepare(
      `SELECT i.kind, i.id FROM items i WHERE i.read_only = 1 AND NOT EXISTS (SELECT 1 FROM moves m WHERE m.kind = i.kind
    AND m.item_id = i.id AND m.state IN ('initial', 'scheduled', 'started', 'replicated'))`,
    )
    .all();
  expect(orphanReadOnly).toEqual([]);
  const settings = db.prepare("SELECT value FROM meta WHERE key = 'settings'").get() as { value: string } | undefined;
  const weights =
    (settings
      ? (JSON.parse(settings.value) as { repository_storages_weighted?: Record<string, unknown> })
          .repository_storages_weighted
      : undefined) ?? {};
  for (const [k, v] of Object.entries(weights)) {
    expect(storages).toContain(k);
    expect(Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 100, `weight ${k}=${String(v)}`).toBe(true);
  }
}

describe('arbitrary requests to the whole sandbox', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await startSandbox();
    // The change count must see the requests' effects alone: no background move progress.
    sb.state.engine.close();
    markCredentialsUsed(sb.state);
  });
  afterAll(async () => {
    agent.destroy();
    await sb.close();
  });

  it('never answers 5xx, errors are JSON, refused or non-admin requests change nothing', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.oneof(
          {
            weight: 3,
            arbitrary: fc.tuple(
              target,
              fc.option(query),
              fc.oneof(
                { weight: 4, arbitrary: validBody },
                { weight: 2, arbitrary: jsonBody },
                { weight: 2, arbitrary: body },
                { weight: 1, arbitrary: protoBody },
              ),
            ),
          },
          {
            weight: 1,
            arbitrary: validWrite.map(
              (w) => [{ method: w.method, path: w.path }, null, JSON.stringify(w.body)] as const,
            ),
          },
        ),
        requestHeaders,
        async ([{ method: m, path: p }, q, b], h0) => {
          const url = q ? `${p}?${q}` : p;
          // A JSON body goes with a JSON content type unless the headers chose one.
          const h = { 'content-type': 'application/json', ...h0 };
          const payload = m === 'GET' || m === 'HEAD' ? undefined : b;
          const before = changeCount(sb.state);
          const res = await send(sb.url, m, url, h, payload);
          const changed = changeCount(sb.state) - before;
          const what = `${m} ${url} ${JSON.stringify(h)} ${payload ?? ''} -> ${res.status} ${res.text.slice(0, 200)}`;
          expect(res.status, what).toBeGreaterThanOrEqual(200);
          expect(res.status, what).toBeLessThan(500);
          if (res.status >= 400 && m !== 'HEAD') {
            expect(res.type, what).toMatch(/^application\/json/);
            expect(() => JSON.parse(res.text), what).not.toThrow();
          }
          if (res.status >= 400) expect(changed, `refused but changed: ${what}`).toBe(0);
          if (m === 'GET' || m === 'HEAD') expect(changed, `a read changed state: ${what}`).toBe(0);
          if (!carriesAdminCredential(url, h, payload))
            expect(changed, `changed without admin credentials: ${what}`).toBe(0);
          checkInvariants(sb);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('regression: parameters under a JSON "__proto__" key are not parameters (no credential, no effect)', async () => {
    const before = changeCount(sb.state);
    const res = await send(
      sb.url,
      'POST',
      '/api/v4/project_repository_storage_moves',
      { 'content-type': 'application/json' },
      JSON.stringify(JSON.parse(`{"__proto__": {"private_token": "${ROOT}", "source_storage_name": "nfs-1"}}`)),
    );
    expect(res.status, res.text).toBe(401);
    expect(changeCount(sb.state)).toBe(before);
    const described = await send(
      sb.url,
      'POST',
      '/api/v4/admin/token',
      { 'content-type': 'application/json', 'private-token': ROOT },
      '{"__proto__": {"token": "glpat-sandbox-root-read-api-0002"}}',
    );
    expect(described.status, described.text).toBe(400);
    expect(JSON.parse(described.text)).toEqual({ error: 'token is missing' });
  });

  it('refuses a body over 1 MB with a JSON 413', async () => {
    const before = changeCount(sb.state);
    const big = JSON.stringify({
      source_storage_name: 'nfs-1',
      destination_storage_name: 'cluster',
      pad: 'x'.repeat(2 * 1024 * 1024),
    });
    const res = await send(
      sb.url,
      'POST',
      '/api/v4/project_repository_storage_moves',
      { 'content-type': 'application/json', 'private-token': ROOT },
      big,
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.text)).toEqual({ error: 'request body is larger than 1048576 bytes' });
    expect(changeCount(sb.state)).toBe(before);
  });

  // Regression: a client hanging up mid-body was logged as a failed handler (error level, with a
  // stack) and answered 500; an orchestrator killed mid-request is client behaviour, not a fault.
  it("takes a body cut short as the client's doing: no change, no error logged, still serving", async () => {
    const lines: string[] = [];
    const logged = await startSandbox({
      logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) }),
    });
    try {
      logged.state.engine.close();
      const before = changeCount(logged.state);
      const { hostname, port } = new URL(logged.url);
      for (const hangUp of ['end', 'destroy'] as const) {
        await new Promise<void>((resolve) => {
          const socket = connect(Number(port), hostname, () => {
            const head =
              `POST /api/v4/project_repository_storage_moves HTTP/1.1\r\nHost: x\r\nPRIVATE-TOKEN: ${ROOT}\r\n` +
              'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"source_s';
            if (hangUp === 'end') socket.end(head);
            else socket.write(head, () => setTimeout(() => socket.destroy(), 50));
          });
          socket.on('close', () => resolve());
          socket.on('error', () => resolve());
          socket.resume();
        });
      }
      await new Promise((r) => setTimeout(r, 50));
      expect(changeCount(logged.state)).toBe(before);
      expect(lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 50)).toEqual([]);
      expect((await send(logged.url, 'GET', '/-/liveness', {}, undefined)).status).toBe(200);
    } finally {
      await logged.close();
    }
  });

  it('answers arbitrary bytes on the socket with a 4xx or a closed connection, and keeps serving', async () => {
    const { hostname, port } = new URL(sb.url);
    const raw = fc.oneof(
      fc.string({ maxLength: 120 }),
      fc.uint8Array({ maxLength: 120 }).map((a) => Buffer.from(a).toString('latin1')),
      fc
        .tuple(
          fc.constantFrom('GET', 'POST', 'G\u0000T', ''),
          printable(40),
          fc.constantFrom(
            'HTTP/1.1',
            'HTTP/9.9',
            'HTTP/1.1\r\nContent-Length: -1',
            'HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz',
          ),
        )
        .map(([m, p, v]) => `${m} /${p} ${v}\r\nHost: x\r\n\r\n`),
    );
    await assertProperty(
      fc.asyncProperty(raw, async (bytes) => {
        const answer = await new Promise<string>((resolve) => {
          const socket = connect(Number(port), hostname);
          let got = '';
          socket.setTimeout(2000, () => socket.destroy());
          socket.on('data', (d: Buffer) => {
            got += d.toString('latin1');
          });
          socket.on('close', () => resolve(got));
          socket.on('error', () => resolve(got));
          socket.end(bytes, 'latin1');
        });
        const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];
        if (status !== undefined) expect(Number(status), answer.slice(0, 200)).toBeLessThan(500);
        const health = await send(sb.url, 'GET', '/-/liveness', {}, undefined);
        expect(health.status).toBe(200);
      }),
      { numRuns: 300 },
    );
  });
});

describe('arbitrary requests under injected faults', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    // A stopped clock keeps the whole run in one rate-limit window, so the limit is always reached.
    const at = Date.parse('2026-06-01T12:00:30Z');
    sb = await startSandbox({
      faults: { errorRate: 0.25, resetRate: 0.1, rateLimit: 150, seed: 4242 },
      clock: realTimersAt(() => at),
    });
    sb.state.engine.close();
    markCredentialsUsed(sb.state);
  });
  afterAll(async () => {
    await sb.close();
  });

  it('the only 5xx is the injected 503, and a faulted request (503, 429, reset) changes nothing', async () => {
    const seen = { reset: 0, unavailable: 0, limited: 0 };
    await assertProperty(
      fc.asyncProperty(validWrite, requestHeaders, async (w, h) => {
        const payload = JSON.stringify(w.body);
        const before = changeCount(sb.state);
        let res: Answer | undefined;
        try {
          // A fresh connection each time: a reset must not take a pooled socket of the next request with it.
          res = await send(
            sb.url,
            w.method,
            w.path,
            { 'content-type': 'application/json', connection: 'close', ...h },
            payload,
          );
        } catch {
          seen.reset++;
        }
        const changed = changeCount(sb.state) - before;
        if (res === undefined) {
          expect(changed, `reset ${w.method} ${w.path}`).toBe(0);
          return;
        }
        const what = `${w.method} ${w.path} -> ${res.status} ${res.text.slice(0, 120)}`;
        if (res.status >= 500) {
          seen.unavailable++;
          expect(res.status, what).toBe(503);
          expect(JSON.parse(res.text), what).toEqual({ message: '503 Service Unavailable' });
        }
        if (res.status === 429) {
          seen.limited++;
          expect(res.text, what).toBe('Retry later\n');
        }
        if (res.status >= 400) expect(changed, what).toBe(0);
      }),
      { numRuns: 300 },
    );
    // The run met every kind of fault, or it proved nothing about them.
    expect(seen.reset).toBeGreaterThan(0);
    expect(seen.unavailable).toBeGreaterThan(0);
    expect(seen.limited).toBeGreaterThan(0);
  });
});
