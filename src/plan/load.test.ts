import { mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PlanError } from './errors.js';
import type { ParsePlanOptions } from './load.js';
import { LineCounter } from 'yaml';
import { loadPlan, parsePlanText, readPlanName, reportYamlErrors } from './load.js';
import { Reader } from './reader.js';

const ENV = { GITLAB_URL: 'https://gitlab.example.com', GITLAB_TOKEN: 'glpat-Zx8Kd2mQpL0vZ7rT4yWnB' };

const MINIMAL = `version: 1
name: retire-nfs
instance:
  url: \${GITLAB_URL}
  token: \${GITLAB_TOKEN}
move:
  from: [nfs-1, nfs-2]
  to: cluster
`;

function parse(text: string, opts: Partial<ParsePlanOptions> = {}) {
  return parsePlanText(text, 'plan.yaml', { env: ENV, baseDir: '/plans', readFile: () => undefined, ...opts });
}

/** The PlanError's problems as "line:col path message" strings. */
function problems(text: string, opts: Partial<ParsePlanOptions> = {}): string[] {
  try {
    parse(text, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(PlanError);
    return (err as PlanError).problems.map((p) => `${p.line}:${p.col} ${p.path} ${p.message}`);
  }
  throw new Error('expected a PlanError');
}

describe('parsePlanText: defaults and normalisation', () => {
  it('fills in every default', () => {
    const { plan, warnings } = parse(MINIMAL);
    expect(warnings).toEqual([]);
    expect(plan).toEqual({
      version: 1,
      name: 'retire-nfs',
      instance: {
        url: 'https://gitlab.example.com',
        credentials: { type: 'token', token: ENV.GITLAB_TOKEN },
        sudo: null,
        timeoutMs: 30_000,
        outageWaitMs: 1_800_000,
      },
      move: {
        from: ['nfs-1', 'nfs-2'],
        to: ['cluster'],
        kinds: ['projects', 'snippets', 'groups'],
        mode: 'throttled',
        concurrency: 10,
        queueAhead: 0,
      },
      weights: { cluster: 100, 'nfs-1': 0, 'nfs-2': 0 },
      poll: {
        intervalMs: 5_000,
        minIntervalMs: 250,
        stuckScheduledAfterMs: 86_400_000,
        stuckRunningAfterMs: 3_600_000,
        stuckRunningPerGbMs: 1_800_000,
      },
      retry: { maxAttempts: 3, backoffMs: 30_000 },
      verify: true,
      geo: { resync: false },
    });
  });

  it('reads every field of the issue example', () => {
    const text = `${MINIMAL}  kinds: [snippets]
  mode: bulk
  concurrency: 50
weights: { cluster: 50, other: 10 }
poll: { interval: 500ms, stuck_scheduled_after: 12h, stuck_running_after: 2h, stuck_running_per_gb: 10m }
retry: { max_attempts: 5, backoff: 1m30s }
verify: false
geo: { resync: true }
`.replace('instance:\n', 'instance:\n  sudo: 42\n  timeout: 1m\n');
    const { plan, warnings, planWeights } = parse(text);
    expect(plan.instance).toMatchObject({ sudo: '42', timeoutMs: 60_000 });
    expect(plan.move).toMatchObject({ kinds: ['snippets'], mode: 'bulk', concurrency: 50 });
    expect(plan.weights).toEqual({ cluster: 50, other: 10, 'nfs-1': 0, 'nfs-2': 0 });
    expect(planWeights).toEqual({ cluster: 50, other: 10 });
    expect(plan.poll).toEqual({
      intervalMs: 500,
      minIntervalMs: 250,
      stuckScheduledAfterMs: 43_200_000,
      stuckRunningAfterMs: 7_200_000,
      stuckRunningPerGbMs: 600_000,
    });
    expect(plan.retry).toEqual({ maxAttempts: 5, backoffMs: 90_000 });
    expect(plan.verify).toBe(false);
    expect(plan.geo.resync).toBe(true);
    expect(warnings.map((w) => w.rule)).toEqual(['bulk-mode-note']);
  });

  it('normalises the URL and warns about an /api/v4 suffix', () => {
    const { plan, warnings } = parse(MINIMAL, {
      env: { ...ENV, GITLAB_URL: 'https://gitlab.example.com/gitlab/api/v4/' },
    });
    expect(plan.instance.url).toBe('https://gitlab.example.com/gitlab');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ path: 'instance.url', line: 4, col: 8, severity: 'warning' });
  });

  it('reads counts and booleans from variables', () => {
    const text = MINIMAL.replace('to: cluster', 'to: cluster\n  concurrency: ${CONC}') + 'verify: ${VERIFY}\n';
    const { plan } = parse(text, { env: { ...ENV, CONC: '25', VERIFY: 'false' } });
    expect(plan.move.concurrency).toBe(25);
    expect(plan.verify).toBe(false);
  });

  it('hash ignores formatting, comments and credentials, but not the fields', () => {
    const a = parse(MINIMAL).hash;
    expect(parse(`# a comment\n${MINIMAL.replace('[nfs-1, nfs-2]', '\n    - nfs-1\n    - nfs-2')}`).hash).toBe(a);
    expect(parse(MINIMAL, { env: { ...ENV, GITLAB_TOKEN: 'glpat-rotatedRotated0123456789' } }).hash).toBe(a);
    expect(parse(MINIMAL.replace('to: cluster', 'to: cluster-2')).hash).not.toBe(a);
    expect(parse(MINIMAL.replace('[nfs-1, nfs-2]', '[nfs-2, nfs-1]')).hash).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
  });

  it('hash of a plan written before the stuck limit was split is unchanged, so its checkpoint resumes without --accept-plan-change', () => {
    // Computed by the release before the stuck limit was split (poll: { intervalMs, stuckAfterMs }).
    expect(parse(MINIMAL).hash).toBe('379ad22bf77842cc210f613194c5f163502c55509d9f0aeb4b1e72ec12835806');
    expect(parse(`${MINIMAL}poll: { interval: 10s, stuck_after: 2h }\n`).hash).toBe(
      '54bd7532f1ff86301a8fee008f87b943e303fdbe07b548811a97ca221199b4f3',
    );
    // The same limits under the new names; and a new limit away from its default is a change.
    expect(parse(`${MINIMAL}poll: { interval: 10s, stuck_running_after: 2h, stuck_running_per_gb: 0s }\n`).hash).toBe(
      '54bd7532f1ff86301a8fee008f87b943e303fdbe07b548811a97ca221199b4f3',
    );
    expect(parse(`${MINIMAL}poll: { stuck_scheduled_after: 48h }\n`).hash).not.toBe(parse(MINIMAL).hash);
    expect(parse(`${MINIMAL}poll: { stuck_running_per_gb: 1h }\n`).hash).not.toBe(parse(MINIMAL).hash);
    // poll.min_interval at its default is no change; away from it, it is.
    expect(parse(`${MINIMAL}poll: { min_interval: 250ms }\n`).hash).toBe(parse(MINIMAL).hash);
    expect(parse(`${MINIMAL}poll: { min_interval: 1s }\n`).hash).not.toBe(parse(MINIMAL).hash);
  });

  it('reads retry.pause_after (the failure breaker): off when absent, every problem at its line:col', () => {
    expect(parse(MINIMAL).plan.retry.pauseAfter).toBeUndefined();
    expect(parse(`${MINIMAL}retry: { pause_after: { failures: 5, within: 10m } }\n`).plan.retry.pauseAfter).toEqual({
      failures: 5,
      withinMs: 600_000,
    });
    expect(problems(`${MINIMAL}retry:\n  pause_after: { failures: 0, within: 10m }\n`)).toEqual([
      expect.stringMatching(/^\d+:\d+ retry\.pause_after\.failures expected a whole number from 1 to 100000/),
    ]);
    expect(problems(`${MINIMAL}retry:\n  pause_after: { failures: 5 }\n`)).toEqual([
      expect.stringMatching(/retry\.pause_after\.within is required/),
    ]);
    expect(problems(`${MINIMAL}retry:\n  pause_after: { failures: 5, within: 10 }\n`)).toEqual([
      expect.stringMatching(/retry\.pause_after\.within a bare number is ambiguous/),
    ]);
    expect(problems(`${MINIMAL}retry:\n  pause_after: { failures: 5, within: 10m, after: 2 }\n`).join('\n')).toMatch(
      /retry\.pause_after\.after/,
    );
    // An old plan hashes as it did: the absent breaker adds nothing.
    expect(parse(`${MINIMAL}retry: { max_attempts: 3 }\n`).hash).toBe(parse(MINIMAL).hash);
  });

  it('reads poll.min_interval (default 250ms, never above poll.interval) and rejects one above poll.interval', () => {
    expect(parse(MINIMAL).plan.poll.minIntervalMs).toBe(250);
    expect(parse(`${MINIMAL}poll: { min_interval: 2s }\n`).plan.poll.minIntervalMs).toBe(2000);
    expect(parse(`${MINIMAL}poll: { interval: 100ms }\n`).plan.poll.minIntervalMs).toBe(100);
    expect(() => parse(`${MINIMAL}poll:\n  interval: 1s\n  min_interval: 2s\n`)).toThrow(
      /poll\.min_interval.*must not exceed poll\.interval \(1s\)/s,
    );
    // A min_interval the plan never wrote is not blamed for an interval out of range.
    expect(problems(`${MINIMAL}poll: { interval: 5ms }\n`).map((p) => p.split(' ')[1])).toEqual(['poll.interval']);
  });
});

describe('parsePlanText: stuck limits', () => {
  it('reads stuck_after as the deprecated name of stuck_running_after, warns at its line:col, and adds no size term', () => {
    const { plan, warnings } = parse(`${MINIMAL}poll:\n  interval: 10s\n  stuck_after: 2h\n`);
    expect(plan.poll).toEqual({
      intervalMs: 10_000,
      minIntervalMs: 250,
      stuckScheduledAfterMs: 86_400_000,
      stuckRunningAfterMs: 7_200_000,
      stuckRunningPerGbMs: 0,
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ path: 'poll.stuck_after', line: 11, col: 3, severity: 'warning' });
    expect(warnings[0]?.message).toMatch(
      /^deprecated: write poll\.stuck_running_after\..*poll\.stuck_scheduled_after \(default 24h\)/,
    );
  });

  it('keeps a size term the plan sets beside the deprecated stuck_after', () => {
    const { plan } = parse(`${MINIMAL}poll: { stuck_after: 2h, stuck_running_per_gb: 20m }\n`);
    expect(plan.poll).toMatchObject({ stuckRunningAfterMs: 7_200_000, stuckRunningPerGbMs: 1_200_000 });
  });

  it('refuses stuck_after beside stuck_running_after, at stuck_after', () => {
    expect(problems(`${MINIMAL}poll:\n  stuck_running_after: 1h\n  stuck_after: 2h\n`)).toEqual([
      '11:3 poll.stuck_after is the deprecated name of poll.stuck_running_after; write only stuck_running_after',
    ]);
  });

  it('reports the new fields out of range or malformed at their line:col', () => {
    expect(
      problems(
        `${MINIMAL}poll:\n  stuck_scheduled_after: 31d\n  stuck_running_after: 500ms\n  stuck_running_per_gb: 25h\n`,
      ),
    ).toEqual([
      expect.stringMatching(/^10:26 poll\.stuck_scheduled_after /),
      expect.stringMatching(/^11:24 poll\.stuck_running_after 500ms is out of range/),
      expect.stringMatching(/^12:25 poll\.stuck_running_per_gb 1d1h|^12:25 poll\.stuck_running_per_gb 25h/),
    ]);
  });

  it('reports an out-of-range running limit written as stuck_after at the stuck_after value', () => {
    expect(problems(`${MINIMAL}poll:\n  stuck_after: 500ms\n`)).toEqual([
      expect.stringMatching(/^10:16 poll\.stuck_running_after 500ms is out of range: allowed 1s to/),
    ]);
  });
});

describe('parsePlanText: every problem at once, with positions', () => {
  it('reports YAML syntax errors and duplicate keys as PlanError with line:col', () => {
    expect(problems('version: 1\nname: a\nname: b\n')).toContainEqual(expect.stringMatching(/^3:1 {2}duplicate key/));
    expect(problems('version: 1\ninstance: [\n')[0]).toMatch(/^\d+:\d+ {2}YAML: /);
    expect(problems('')).toEqual(['1:1  the plan is empty; start with "version: 1"']);
    expect(problems('- a\n- b\n')[0]).toMatch(/^1:1 {2}expected a mapping/);
  });

  it('reports a broken line once, with a hint for unquoted ${VAR} in flow style, and never echoes source', () => {
    expect(problems('version: 1\nname: a\ninstance: {url: ${U}, token: ${T}}\nmove: {from: [a], to: b}\n')).toEqual([
      '3:18  YAML: Unexpected flow-map-start at node end (inside { } or [ ], quote references: "${VAR}")',
      '4:1  YAML: Unexpected scalar token in YAML stream',
    ]);
    expect(problems('a: b: hunter2\n').join('\n')).not.toContain('hunter2');
  });

  it('answers a plan nested deeper than 32 levels with that one problem, where it happens', () => {
    // Just under the 1 MB cap. Before: 582 s and 1.19 GB, then "Maximum call stack size exceeded".
    expect(problems(`version: 1\na: ${'['.repeat(999_000)}`)).toEqual([
      '2:35  YAML nested deeper than 32 levels (mappings and lists inside each other); a plan needs 3',
    ]);
  });

  it('answers a plan of more than 50,000 YAML tokens with that one problem, where it passes the bound', () => {
    // A plan under 1 MB of list items or keys took seconds to parse and walk; the example plan has 230 tokens.
    expect(problems(`version: 1\nname: x\nmove:\n  from: [${'a, '.repeat(300_000)}a]\n`)).toEqual([
      '4:37491  more than 50000 YAML tokens (keys, values, brackets, comments ...); a plan has a few hundred',
    ]);
    expect(problems(`version: 1\n${Array.from({ length: 100_000 }, (_, i) => `k${i}: 1\n`).join('')}`)).toEqual([
      '7143:8  more than 50000 YAML tokens (keys, values, brackets, comments ...); a plan has a few hundred',
    ]);
  });

  it('looks for the ${VAR} hint on a long broken line in one pass', () => {
    // The hint's regex retried from every bracket to the end of the line: minutes for this one. A
    // plan cannot hold it any more (more than 50,000 tokens), so the error is given directly.
    const text = `version: 1\na: [${'[], '.repeat(150_000)}] ]\n`;
    const lineCounter = new LineCounter();
    lineCounter.addNewLine(0);
    lineCounter.addNewLine(11);
    const r = new Reader('plan.yaml', text, lineCounter, {}, '/plans', () => undefined);
    reportYamlErrors(r, text, [
      { code: 'UNEXPECTED_TOKEN', message: 'Unexpected flow-seq-end token', pos: [text.length - 2, text.length - 1] },
    ]);
    expect(r.errors.map((e) => `${e.line}:${e.col} ${e.message}`)).toEqual([
      '2:600007 YAML: Unexpected flow-seq-end token',
    ]);
    expect(problems('version: 1\na: [[], [], ${X}] ]\n')).toEqual([
      expect.stringMatching(/quote references: "\$\{VAR\}"\)$/),
    ]);
  });

  it('reports missing required fields', () => {
    expect(problems('version: 1\n')).toEqual([
      '1:1 name missing required field name',
      '1:1 instance missing required field instance',
      '1:1 move missing required field move',
    ]);
    expect(problems(MINIMAL.replace('  to: cluster\n', ''))).toEqual(['7:3 move.to missing required field to']);
    expect(problems(MINIMAL.replace('version: 1', 'version: 2'))).toEqual([
      '1:10 version unsupported plan version; this shardmove reads version: 1',
    ]);
  });

  it('suggests the closest field for a typo, at any level', () => {
    expect(problems(MINIMAL.replace('  to: cluster', '  to: cluster\n  concurency: 5'))).toEqual([
      '9:3 move.concurency unknown field "concurency" (did you mean "concurrency"?)',
    ]);
    expect(problems(`${MINIMAL}retyr: {}\n`)).toEqual(['9:1 retyr unknown field "retyr" (did you mean "retry"?)']);
  });

  it('reports wrong types with the field path', () => {
    const text = `${MINIMAL}  mode: fast\n  kinds: projects\npoll: { interval: 5 }\nverify: yes\nweights: { cluster: high }\n`;
    expect(problems(text)).toEqual([
      '9:9 move.mode "fast" is not one of throttled, bulk',
      '10:10 move.kinds expected a list of projects, snippets, groups, e.g. [a, b]',
      '11:19 poll.interval a bare number is ambiguous; write a unit, e.g. "5s" or "5ms"',
      '12:9 verify expected true or false',
      '13:21 weights.cluster expected a whole number',
    ]);
  });

  it('names a missing variable at its reference', () => {
    expect(problems(MINIMAL.replace('url: ${GITLAB_URL}', 'url: https://${HOST}/x'))).toEqual([
      '4:16 instance.url environment variable HOST is not set',
    ]);
  });

  it('refuses names that cannot name a file', () => {
    expect(problems(MINIMAL.replace('retire-nfs', '../etc'))[0]).toMatch(/^2:7 name must match/);
  });

  it('refuses aliases', () => {
    expect(
      problems(MINIMAL.replace('to: cluster', 'to: &c cluster') + 'weights: { x: 0 }\nname2: *c\n').join('\n'),
    ).toMatch(/unknown field "name2"/);
    expect(problems(MINIMAL.replace('from: [nfs-1, nfs-2]', 'from: &s [nfs-1]\n  kinds: *s'))).toEqual([
      '8:10 move.kinds aliases (*name) are not supported in plans; write the value out',
    ]);
  });

  it('refuses a "billion laughs" without expanding it: plans never resolve aliases', () => {
    // The loader walks the YAML nodes and never calls toJS, so yaml's maxAliasCount does not come into it.
    const lol = ['lol: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (const [prev, name] of ['ab', 'bc', 'cd', 'de', 'ef', 'fg', 'gh', 'hi'])
      lol.push(`${name}${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    const text = `${MINIMAL}x:\n${lol.map((l) => `  ${l}\n`).join('')}weights: *i\n`;
    expect(problems(text)).toEqual([
      '9:1 x unknown field "x"; known fields: version, name, checkpoint, instance, move, weights, poll, retry, verify, geo, schedule, prometheus, throttle, capacity, notify',
      '19:10 weights aliases (*name) are not supported in plans; write the value out',
    ]);
  });

  it('turns a PlanError message into one line per problem', () => {
    try {
      parse(`${MINIMAL}  mode: fast\nverify: yes\n`);
      expect.unreachable();
    } catch (err) {
      expect((err as PlanError).code).toBe('SHARDMOVE_PLAN_INVALID');
      expect((err as Error).message.split('\n')).toEqual([
        'invalid plan plan.yaml (2 problems):',
        'plan.yaml:9:9: move.mode: "fast" is not one of throttled, bulk',
        'plan.yaml:10:9: verify: expected true or false',
      ]);
    }
  });
});

describe('parsePlanText: secrets', () => {
  const LEAK = 'glpat-Qw8Er7Ty6Ui5Op4As3Df';

  it('refuses a literal token without repeating it', () => {
    try {
      parse(MINIMAL.replace('${GITLAB_TOKEN}', LEAK));
      expect.unreachable();
    } catch (err) {
      const e = err as PlanError;
      expect(e.problems.map((p) => `${p.line}:${p.col} ${p.path}`)).toEqual(['5:10 instance.token']);
      expect(e.problems[0]!.message).toMatch(/secrets come from the environment or a file/);
      expect(e.message).not.toContain('Qw8Er7');
    }
  });

  it('refuses a literal secret even when it does not look like a token', () => {
    expect(problems(MINIMAL.replace('${GITLAB_TOKEN}', 'hunter2'))[0]).toMatch(/^5:10 instance.token a literal secret/);
    expect(problems(MINIMAL.replace('${GITLAB_TOKEN}', 'x${GITLAB_TOKEN}'))[0]).toMatch(/literal secret/);
  });

  it('refuses token-looking text anywhere: other fields, keys, comments', () => {
    const text = `${MINIMAL}# old token: ${LEAK}\nweights: { ${LEAK}: 0 }\n`.replace(
      'name: retire-nfs',
      'name: retire-nfs\n',
    );
    const found = problems(text.replace('instance:', `instance:\n  sudo: "${LEAK}"`));
    expect(found.map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual([
      '5:10 instance.sudo',
      '11:14 ',
      '12:12 weights.***',
    ]);
    expect(found.join('\n')).not.toContain('Qw8Er7');
  });

  it('accepts a token from a variable and keeps it out of every message', () => {
    const env = { ...ENV, GITLAB_TOKEN: LEAK };
    expect(parse(MINIMAL, { env }).plan.instance.credentials).toEqual({ type: 'token', token: LEAK });
    try {
      parse(MINIMAL.replace('to: cluster', 'to: ${GITLAB_TOKEN}'), { env });
    } catch (err) {
      expect((err as Error).message).not.toContain('Qw8Er7');
    }
  });

  it('reads token_file relative to the plan, trimmed, and warns when others can read it', () => {
    const seen: string[] = [];
    const readFile = (p: string) => (seen.push(p), { text: `  ${LEAK}\n`, mode: 0o100644 });
    const { plan, warnings } = parse(MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token_file: secrets/token'), {
      readFile,
    });
    expect(seen).toEqual(['/plans/secrets/token']);
    expect(
      parse(MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token_file: secrets/token'), { readFile }).secretFiles,
    ).toEqual({ 'instance.token_file': '/plans/secrets/token' });
    expect(plan.instance.credentials).toEqual({ type: 'token', token: LEAK });
    expect(warnings.map((w) => `${w.line}:${w.col} ${w.path}`)).toEqual(['5:15 instance.token_file']);
    expect(
      parse(MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token_file: t'), {
        readFile: () => ({ text: LEAK, mode: 0o100600 }),
      }).warnings,
    ).toEqual([]);
  });

  it('reports a missing or empty token file at the field', () => {
    expect(problems(MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token_file: nope'))[0]).toMatch(
      /^5:15 instance.token_file file not found: \/plans\/nope/,
    );
    expect(
      problems(MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token_file: t'), {
        readFile: () => ({ text: ' \n', mode: 0o600 }),
      })[0],
    ).toMatch(/^5:15 instance.token_file file is empty/);
  });

  it('resolveSecrets: false checks the form of credentials without reading them, same hash', () => {
    const loaded = parse(MINIMAL, { env: { GITLAB_URL: ENV.GITLAB_URL }, resolveSecrets: false });
    expect(loaded.plan.instance.credentials).toEqual({ type: 'token', token: '' });
    expect(loaded.hash).toBe(parse(MINIMAL).hash);
    const noRead = () => {
      throw new Error('must not read');
    };
    expect(
      parse(MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token_file: t'), { readFile: noRead, resolveSecrets: false })
        .plan.move.to,
    ).toEqual(['cluster']);
    expect(problems(MINIMAL.replace('${GITLAB_TOKEN}', LEAK), { resolveSecrets: false })[0]).toMatch(
      /^5:10 instance.token a literal secret/,
    );
  });

  it('wants exactly one of token, token_file, oauth', () => {
    expect(problems(MINIMAL.replace('  token: ${GITLAB_TOKEN}\n', ''))).toEqual([
      '4:3 instance missing credentials: set one of token (${VAR}), token_file or oauth',
    ]);
    expect(problems(MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token: ${GITLAB_TOKEN}\n  token_file: t'))[0]).toMatch(
      /^6:3 instance.token_file set exactly one/,
    );
  });

  it('reads OAuth credentials from variables and files; client id and redirect URI may be literal', () => {
    const oauth = `  oauth:
    access_token: \${AT}
    refresh_token_file: refresh
    client_id: sandbox-app-uid
    client_secret: \${CS}
    redirect_uri: http://localhost/cb
`;
    const env = { ...ENV, AT: 'access-value-1', CS: 'client-secret-1' };
    const text = MINIMAL.replace('  token: ${GITLAB_TOKEN}\n', oauth);
    const { plan } = parse(text, { env, readFile: () => ({ text: 'refresh-value-1\n', mode: 0o600 }) });
    expect(plan.instance.credentials).toEqual({
      type: 'oauth',
      accessToken: 'access-value-1',
      refreshToken: 'refresh-value-1',
      clientId: 'sandbox-app-uid',
      clientSecret: 'client-secret-1',
      redirectUri: 'http://localhost/cb',
    });
    expect(
      problems(text.replace('${CS}', 'literal-secret'), { env, readFile: () => ({ text: 'r', mode: 0o600 }) }),
    ).toEqual([
      '9:20 instance.oauth.client_secret a literal secret is not allowed: secrets come from the environment or a file: write ${VAR} or use client_secret_file',
    ]);
    expect(
      problems(text.replace('    redirect_uri: http://localhost/cb\n', ''), {
        env,
        readFile: () => ({ text: 'r', mode: 0o600 }),
      }),
    ).toEqual(['6:5 instance.oauth.redirect_uri missing: set redirect_uri or redirect_uri_file']);
  });
});

describe('loadPlan', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-plan-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the file and its token file from disk', async () => {
    writeFileSync(join(dir, 'token'), 'glpat-FromFile0123456789abcd\n');
    chmodSync(join(dir, 'token'), 0o600);
    writeFileSync(join(dir, 'p.yaml'), MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token_file: token'));
    const loaded = await loadPlan('p.yaml', { env: ENV, cwd: dir });
    expect(loaded.file).toBe('p.yaml');
    expect(loaded.plan.instance.credentials).toEqual({ type: 'token', token: 'glpat-FromFile0123456789abcd' });
    expect(loaded.warnings).toEqual([]);
  });

  it('a missing plan file is a PlanError too', async () => {
    await expect(loadPlan('missing.yaml', { env: ENV, cwd: dir })).rejects.toMatchObject({
      code: 'SHARDMOVE_PLAN_INVALID',
      problems: [{ file: 'missing.yaml', line: 1, col: 1, message: 'no such file' }],
    });
  });

  it('refuses bytes that are not UTF-8 at the line:col of the first one, instead of reading them as U+FFFD', async () => {
    // `name: caf` then Latin-1 é (0xE9), as an editor saving in the wrong encoding writes it.
    writeFileSync(
      join(dir, 'latin1.yaml'),
      Buffer.concat([
        Buffer.from(MINIMAL.replace('name: retire-nfs', 'name: caf')),
        Buffer.from([0xe9]),
        Buffer.from('\n'),
      ]),
    );
    const offset = Buffer.byteLength(MINIMAL.replace('name: retire-nfs', 'name: caf'));
    await expect(loadPlan('latin1.yaml', { env: ENV, cwd: dir })).rejects.toMatchObject({
      problems: [
        {
          file: 'latin1.yaml',
          line: 9,
          col: 1,
          path: '',
          message: `not UTF-8 (byte 0xe9 at offset ${offset}); save the plan as UTF-8`,
        },
      ],
    });
    // In the middle of a line, after characters of several bytes: the column counts characters.
    writeFileSync(
      join(dir, 'mid.yaml'),
      Buffer.concat([Buffer.from(`${MINIMAL}# café ☕ `), Buffer.from([0xff]), Buffer.from('\n')]),
    );
    await expect(loadPlan('mid.yaml', { env: ENV, cwd: dir })).rejects.toMatchObject({
      problems: [{ line: 9, col: 10, message: expect.stringMatching(/^not UTF-8 \(byte 0xff at offset \d+\)/) }],
    });
    // UTF-8 with a byte order mark is fine.
    writeFileSync(join(dir, 'bom.yaml'), `\uFEFF${MINIMAL}# café ☕\n`);
    expect((await loadPlan('bom.yaml', { env: ENV, cwd: dir })).plan.name).toBe('retire-nfs');
  });

  it('refuses a plan that is a directory or over 1 MB, and a token file that is a directory, before reading them', async () => {
    mkdirSync(join(dir, 'a-dir'));
    await expect(loadPlan('a-dir', { env: ENV, cwd: dir })).rejects.toMatchObject({
      code: 'SHARDMOVE_PLAN_INVALID',
      problems: [{ file: 'a-dir', line: 1, col: 1, message: 'cannot read it (ENOTFILE)' }],
    });
    writeFileSync(join(dir, 'big.yaml'), `${MINIMAL}#${'x'.repeat(1_000_000)}\n`);
    await expect(loadPlan('big.yaml', { env: ENV, cwd: dir })).rejects.toMatchObject({
      problems: [{ file: 'big.yaml', line: 1, col: 1, message: 'larger than 1 MB, not a plan' }],
    });
    writeFileSync(join(dir, 'dir-token.yaml'), MINIMAL.replace('token: ${GITLAB_TOKEN}', 'token_file: a-dir'));
    await expect(loadPlan('dir-token.yaml', { env: ENV, cwd: dir })).rejects.toMatchObject({
      problems: [
        { line: 5, col: 15, path: 'instance.token_file', message: `cannot read ${join(dir, 'a-dir')} (ENOTFILE)` },
      ],
    });
  });
});

describe('readPlanName (for status and control when the plan does not load)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardmove-name-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the name of a plan whose other fields are wrong', async () => {
    writeFileSync(join(dir, 'p.yaml'), 'version: 1\nname: retire-nfs\ninstance:\n  url: ${UNSET}\n');
    expect(await readPlanName('p.yaml', dir)).toBe('retire-nfs');
  });

  it('gives up, within the loader limits, on what is not a plan', async () => {
    // yaml.parse on these took 100 s (100,000 keys) and 5 s (a stack overflow) in `status`.
    writeFileSync(
      join(dir, 'keys.yaml'),
      `name: x\n${Array.from({ length: 100_000 }, (_, i) => `k${i}: 1\n`).join('')}`,
    );
    writeFileSync(join(dir, 'deep.yaml'), `name: x\na: ${'['.repeat(999_000)}`);
    writeFileSync(
      join(dir, 'latin1.yaml'),
      Buffer.concat([Buffer.from('name: caf'), Buffer.from([0xe9]), Buffer.from('\n')]),
    );
    for (const file of ['keys.yaml', 'deep.yaml', 'latin1.yaml', 'missing.yaml'])
      expect(await readPlanName(file, dir)).toBeUndefined();
  });
});

describe('move.to as a list and move.until, written carelessly', () => {
  const withMove = (lines: string) => MINIMAL.replace('  to: cluster\n', lines);
  it.each([
    ['  to: []\n', '8:7 move.to list at least one destination storage'],
    ['  to: [cluster, cluster]\n', '8:17 move.to[1] "cluster" is listed twice'],
    ['  to: [cluster, nfs-2]\n', 'move.from[1] the destination "nfs-2" is also a source'],
    ["  to: ['a b']\n", '8:8 move.to[0] expected a storage name (no spaces or slashes)'],
    ['  to: [{a: 1}]\n', '8:8 move.to[0] expected a string'],
    ['  to: cluster\n  until: {moved: 0}\n', '9:18 move.until.moved expected bytes above 0'],
    ['  to: cluster\n  until: {moved: -5}\n', '9:18 move.until.moved expected bytes above 0'],
    ["  to: cluster\n  until: {moved: '`rm -rf /`'}\n", '9:18 move.until.moved expected bytes above 0'],
    ['  to: cluster\n  until: {moved: 1TiB, free: 1TiB}\n', '9:10 move.until write one bound, not both'],
    ['  to: cluster\n  until: {}\n', '9:10 move.until write one bound'],
    ["  to: cluster\n  until: 'lots'\n", '9:10 move.until expected a mapping'],
    ['  to: cluster\n  until: {free: 1TiB}\n', "move.until.free needs each source's free space"],
    ['  to: [cluster, other]\n  mode: bulk\n', 'move.to bulk mode moves each source to one destination'],
    ['  to: cluster\n  until: {moved: 1TiB}\n  mode: bulk\n', 'move.until bulk mode moves everything on a source'],
  ])('%j is refused at its line:col, naming the field', (lines, expected) => {
    expect(problems(withMove(lines)).join('\n')).toContain(expected);
  });

  it('reads one destination as a list of one, and hashes it as the single name it was', () => {
    const one = parse(MINIMAL);
    const listed = parse(withMove('  to: [cluster]\n'));
    expect(one.plan.move.to).toEqual(['cluster']);
    expect(listed.plan.move.to).toEqual(['cluster']);
    expect(listed.hash).toBe(one.hash);
    expect(parse(withMove('  to: [cluster, other]\n  until: {moved: 2TiB}\n')).plan.move).toMatchObject({
      to: ['cluster', 'other'],
      until: { movedBytes: 2 * 2 ** 40 },
    });
  });
});
