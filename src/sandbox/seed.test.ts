import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from './db.js';
import { fakeChecksum } from './checksum.js';
import { MAX_SEED_ALIASES, SeedError, applySeed, loadSeed, parseSeed } from './seed.js';

function seeded(projects: number, extra: Partial<ReturnType<typeof loadSeed>['inventory']> = {}) {
  const seed = loadSeed();
  seed.inventory = { generate: { ...seed.inventory.generate!, projects, snippets: 7, groups: 3 }, ...extra };
  const db = openDatabase();
  applySeed(db, seed, Date.UTC(2026, 0, 1));
  return db;
}

describe('seeding the inventory', () => {
  it('generates ids 1..N per kind with names, namespaces and checksums derived from the id', () => {
    const db = seeded(1001);
    expect(
      db.prepare('SELECT kind, count(*) n, min(id) lo, max(id) hi FROM items GROUP BY kind ORDER BY kind').all(),
    ).toEqual([
      { kind: 'group', n: 3, lo: 1, hi: 3 },
      { kind: 'project', n: 1001, lo: 1, hi: 1001 },
      { kind: 'snippet', n: 7, lo: 1, hi: 7 },
    ]);
    const p = db.prepare("SELECT * FROM items WHERE kind = 'project' AND id = 5").get() as Record<string, unknown>;
    expect(p).toMatchObject({ name: 'project-5', path: 'project-5', namespace: 'group-2', read_only: 0, owner_id: 1 });
    expect(p.checksum).toBe(fakeChecksum('project', 5, p.commit_count as number));
    expect(db.prepare("SELECT namespace FROM items WHERE kind = 'group' AND id = 1").get()).toEqual({ namespace: '' });
  });

  it('is deterministic under random_seed', () => {
    const a = seeded(500).prepare('SELECT * FROM items ORDER BY kind, id').all();
    const b = seeded(500).prepare('SELECT * FROM items ORDER BY kind, id').all();
    expect(a).toEqual(b);
  });

  it('lets explicit items override generated ids', () => {
    const db = seeded(10, {
      projects: [
        { id: 3, storage: 'cluster', name: 'special' },
        { id: 50, storage: 'nfs-2' },
      ],
    });
    expect(db.prepare("SELECT id, name, storage FROM items WHERE kind = 'project' AND id IN (3, 50)").all()).toEqual([
      { id: 3, name: 'special', storage: 'cluster' },
      { id: 50, name: 'project-50', storage: 'nfs-2' },
    ]);
    expect((db.prepare("SELECT count(*) n FROM items WHERE kind = 'project'").get() as { n: number }).n).toBe(11);
  });

  it('marks generated projects hidden or pending deletion from a generator of their own', () => {
    const plain = seeded(2000)
      .prepare('SELECT kind, id, storage, visibility, size_mb, commit_count FROM items ORDER BY kind, id')
      .all();
    const seed = loadSeed();
    seed.inventory = {
      generate: {
        ...seed.inventory.generate!,
        projects: 2000,
        snippets: 7,
        groups: 3,
        hidden_fraction: 0.1,
        pending_delete_fraction: 0.05,
      },
    };
    const db = openDatabase();
    applySeed(db, seed, Date.UTC(2026, 0, 1));
    // The fractions leave every other draw as it was.
    expect(
      db.prepare('SELECT kind, id, storage, visibility, size_mb, commit_count FROM items ORDER BY kind, id').all(),
    ).toEqual(plain);
    const n = (sql: string) => (db.prepare(`SELECT count(*) n FROM items WHERE ${sql}`).get() as { n: number }).n;
    expect(n("kind = 'project' AND hidden = 1")).toBeGreaterThan(150);
    expect(n("kind = 'project' AND hidden = 1")).toBeLessThan(250);
    expect(n("kind = 'project' AND pending_delete = 1")).toBeGreaterThan(60);
    expect(n("kind = 'project' AND pending_delete = 1")).toBeLessThan(140);
    expect(n("kind != 'project' AND (hidden = 1 OR pending_delete = 1)")).toBe(0);
  });

  it('keeps the storage index after a large load (built once at the end)', () => {
    const db = seeded(60_000);
    const plan = db
      .prepare(
        "EXPLAIN QUERY PLAN SELECT id FROM items WHERE kind = 'project' AND storage = 'nfs-1' AND id > 10 ORDER BY id LIMIT 20",
      )
      .all() as { detail: string }[];
    expect(plan.map((r) => r.detail).join(' ')).toContain('items_storage');
  });

  it('computes checksums that change with the commit count', () => {
    expect(fakeChecksum('project', 1, 10)).toMatch(/^[0-9a-f]{40}$/);
    expect(fakeChecksum('project', 1, 10)).not.toBe(fakeChecksum('project', 1, 11));
    expect(fakeChecksum('project', 1, 10)).not.toBe(fakeChecksum('snippet', 1, 10));
  });
});

/** The problems parseSeed reports for `text`, without the file name. */
function problems(text: string): string[] {
  try {
    parseSeed(text, 'seed.yaml');
  } catch (err) {
    if (err instanceof SeedError) return err.problems.map((p) => p.replace(/^seed\.yaml:/, ''));
    throw err;
  }
  return [];
}

describe('validating a seed', () => {
  it('accepts the built-in seed and fills in the defaults', () => {
    const seed = loadSeed();
    expect(seed.instance).toMatchObject({
      tier: 'ultimate',
      weights: { default: 100 },
      admin_mode: false,
      feature_flags: {},
    });
    const minimal = parseSeed('users: [{ id: 1, username: root }]\n');
    expect(minimal.instance).toEqual({
      version: '17.11.0',
      tier: 'ultimate',
      storages: ['default'],
      unreachable: [],
      personal_access_token_prefix: 'glpat-',
      previous_prefixes: [],
      impersonation_enabled: true,
      oauth_ttl_seconds: 7200,
      admin_mode: false,
      feature_flags: {},
      edition: 'ee',
      unlistable: [],
    });
    expect(minimal).toMatchObject({ applications: [], credentials: [], inventory: {} });
    expect(parseSeed('inventory: { generate: {} }\n').inventory.generate).toEqual({
      random_seed: 42,
      projects: 0,
      snippets: 0,
      groups: 0,
      public_fraction: 0.2,
      hidden_fraction: 0,
      pending_delete_fraction: 0,
      size_mb: { median: 40, max: 4000 },
    });
  });

  it('rejects unknown fields at their key, naming the known ones', () => {
    expect(
      problems('instance:\n  weigths: { default: 100 }\nusers:\n  - { id: 1, username: root, emial: x }\nextra: 1\n'),
    ).toEqual([
      '2:3: instance.weigths: unknown field "weigths"; known fields: version, tier, storages, unreachable, personal_access_token_prefix, ' +
        'previous_prefixes, impersonation_enabled, oauth_ttl_seconds, weights, admin_mode, feature_flags, rate_limits, edition, unlistable, monitoring_allowlist, ' +
        'storage_capacity, storage_filesystems, storage_bandwidth, disk_busy',
      '4:30: users.0.emial: unknown field "emial"; known fields: id, username, admin, name, email, state',
      '5:1: extra: unknown field "extra"; known fields: instance, users, applications, credentials, inventory, geo_sites',
    ]);
  });

  it('reports every problem at once, in file order, at the field (or the mapping that lacks it)', () => {
    const text = [
      'instance:',
      '  tier: gold',
      '  storages: [default, nfs-1]',
      '  unreachable: [nfs-9]',
      '  weights: { nfs-1: 120 }',
      'users:',
      '  - { id: 0 }',
      'credentials:',
      '  - { type: personal, user: nobody, value: "glpat-x", expires_at: 2099-1-1 }',
      '  - { type: oauth, user: root }',
      '  - { type: magic, value: x }',
      'inventory:',
      '  generate: { storages: { nfs-3: 1 }, public_fraction: 2 }',
      '  projects: [{ id: 1, storage: nope }]',
    ].join('\n');
    expect(problems(text)).toEqual([
      '2:9: instance.tier: must be free, premium or ultimate',
      '4:17: instance.unreachable.0: unknown storage "nfs-9"',
      '5:21: instance.weights.nfs-1: must be between 0 and 100',
      '7:5: users.0.username: must be a non-empty string',
      '7:11: users.0.id: must be an integer >= 1',
      '9:29: credentials.0.user: unknown user "nobody"',
      '9:67: credentials.0.expires_at: must be a date YYYY-MM-DD (quote it in YAML)',
      '10:5: credentials.1.access_token: must be a non-empty string',
      '10:5: credentials.1.refresh_token: must be a non-empty string',
      '10:5: credentials.1.application: must be an integer >= 1',
      '10:26: credentials.1.user: unknown user "root"',
      `11:13: credentials.2.type: must be one of personal, impersonation, project_access, group_access, oauth, session, job, deploy, cluster_agent, pipeline_trigger, feed, runner, incoming_email, feature_flags_client`,
      '13:34: inventory.generate.storages.nfs-3: unknown storage "nfs-3"',
      '13:56: inventory.generate.public_fraction: must be between 0 and 1',
      '14:32: inventory.projects.0.storage: unknown storage "nope"',
    ]);
  });

  it('refuses generated sizes that are not above 0', () => {
    // A max of -5 gave every generated repository a size of -5 MB.
    expect(problems('inventory:\n  generate: { projects: 3, size_mb: { median: 0, max: -5 } }\n')).toEqual([
      '2:47: inventory.generate.size_mb.median: must be a number > 0',
      '2:55: inventory.generate.size_mb.max: must be a number > 0',
    ]);
  });

  it('reports YAML errors and a seed that is not a mapping with their position', () => {
    expect(problems('users: [\n')[0]).toMatch(/^\d+:\d+: /);
    expect(problems('- 1\n')).toEqual(['1:1: a seed is a YAML mapping']);
    expect(problems('users: 3\n')).toEqual(['1:8: users: must be a list']);
  });
});

describe('hostile seeds', () => {
  it('refuses nesting deeper than 32 levels where it happens, at once', () => {
    // Before: minutes of parsing, then "Maximum call stack size exceeded".
    expect(problems(`users: ${'['.repeat(999_990)}`)).toEqual([
      `1:${8 + 31}: YAML nested deeper than 32 levels (mappings and lists inside each other); a seed needs 4`,
    ]);
  });

  it('refuses a "billion laughs" of anchors and aliases at the first alias, without expanding it', () => {
    // Before: yaml's ReferenceError escaped as an internal error (exit 1), not an invalid seed (exit 2).
    const lol = ['lol: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
    for (const [prev, name] of ['ab', 'bc', 'cd', 'de', 'ef', 'fg', 'gh', 'hi'])
      lol.push(`${name}${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    const text = `users: [{ id: 1, username: root }]\ninstance:\n  feature_flags: { x: true }\ninventory:\n  extra:\n${lol.map((l) => `    ${l}`).join('\n')}\n`;
    expect(problems(text)).toEqual([
      '7:13: the aliases (*name) from here on expand too far: yaml allows an anchor 100 uses, counting the aliases inside it ' +
        '(anchors of lists of aliases of anchors ... are a "billion laughs"); write the values out',
    ]);
  });

  it(`takes a few aliases, and refuses more than ${MAX_SEED_ALIASES} anchors and aliases where they pass the bound`, () => {
    const seed = parseSeed(
      'users:\n  - &root { id: 1, username: root, admin: true }\ncredentials:\n  - { type: personal, user: root, value: v1, scopes: &s [api] }\n  - { type: personal, user: root, value: v2, scopes: *s }\n',
    );
    expect(seed.credentials.map((c) => c.scopes)).toEqual([['api'], ['api']]);
    // yaml resolves each alias by looking through every anchor and alias before it: quadratic.
    const items = Array.from({ length: 50_000 }, (_, i) => `    - &p${i} { id: ${i + 1}, storage: default }\n`).join(
      '',
    );
    expect(problems(`inventory:\n  projects:\n${items}`)).toEqual([
      `${3 + MAX_SEED_ALIASES}:7: more than ${MAX_SEED_ALIASES} anchors and aliases (&name, *name); write the values out`,
    ]);
  });

  it('finds a repeated key among a hundred thousand in one pass', () => {
    // yaml compared each key with every earlier one: minutes for this seed.
    const flags = Array.from({ length: 100_000 }, (_, i) => `    f${i}: true\n`).join('');
    expect(problems(`instance:\n  feature_flags:\n${flags}    f7: false\n`)).toEqual([
      `${100_003}:5: Map keys must be unique`,
    ]);
  });

  it('refuses bytes that are not UTF-8 at their line:col, instead of reading them as U+FFFD', () => {
    const dir = mkdtempSync(join(tmpdir(), 'seed-utf8-'));
    try {
      const file = join(dir, 'seed.yaml');
      writeFileSync(
        file,
        Buffer.concat([
          Buffer.from('users:\n  - { id: 1, username: r'),
          Buffer.from([0xc3, 0x28]),
          Buffer.from('t }\n'),
        ]),
      );
      expect(() => loadSeed(file)).toThrow(
        new SeedError([`${file}:2:25: not UTF-8 (byte 0xc3 at offset 31); save the seed as UTF-8`]),
      );
      // Other scripts are fine.
      writeFileSync(file, 'users:\n  - { id: 1, username: röot, name: 管理者 }\n');
      expect(loadSeed(file).users[0]).toMatchObject({ username: 'röot', name: '管理者' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('former paths', () => {
  const project = (id: number, former: string[]) => ({
    id,
    storage: 'default',
    namespace: 'acme',
    former_paths: former,
  });

  it('keeps each listed former path for its project', () => {
    const db = seeded(0, { projects: [project(3, ['acme/old', 'other/older'])] });
    expect(db.prepare('SELECT path, project_id FROM redirect_routes ORDER BY path').all()).toEqual([
      { path: 'acme/old', project_id: 3 },
      { path: 'other/older', project_id: 3 },
    ]);
  });

  it('refuses one former path for two projects', () => {
    expect(() => seeded(0, { projects: [project(3, ['acme/old']), project(4, ['ACME/old'])] })).toThrow(
      /"ACME\/old" is a former path of projects 3 and 4/,
    );
  });

  it('refuses a former path without a namespace', () => {
    expect(problems('inventory:\n  projects: [{ id: 1, storage: default, former_paths: [old] }]\n').join('\n')).toMatch(
      /must be a full path such as group-1\/old-name/,
    );
  });
});
