/**
 * The seed: instance configuration, users, OAuth applications, credentials and inventory.
 * `instance` is configuration (like gitlab.rb): re-applied on every start, so a restart picks up
 * e.g. impersonation_enabled. Everything else is data: written only into an empty database.
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Document } from 'yaml';
import { LineCounter, isMap, isScalar } from 'yaml';
import type { Db, ItemKind } from './db.js';
import { ITEM_COLUMNS, getMeta, isoTime, setMeta } from './db.js';
import type { CredentialType, GenerateSpec, InstanceConfig, InstanceSettings, ItemSeed, Seed } from './seed-schema.js';
import { seedSchema } from './seed-schema.js';
import { insertSeedItems, readSeedItems } from './seed-items.js';
import { applyListedForks, drawForkNetworks, seedPools } from './seed-forks.js';
import type { SeedItems } from './seed-items.js';
import { fakeChecksum } from './checksum.js';
import { createRandom } from './random.js';
import { ShardmoveError } from '../shared/errors.js';
import { SEED_INVALID } from '../shared/sandbox-errors.js';
import type { YamlLimitHit } from '../shared/yaml-input.js';
import { decodeUtf8, parseYaml } from '../shared/yaml-input.js';

/** A seed file that cannot be used; `problems` name file:line:col. */
export class SeedError extends ShardmoveError<typeof SEED_INVALID> {
  constructor(readonly problems: string[]) {
    super(SEED_INVALID, `invalid seed:\n  ${problems.join('\n  ')}`);
  }
}

/** Path of the built-in seed (the example in docs/sandbox.md). */
export const DEFAULT_SEED_PATH = fileURLToPath(new URL('../../plans/sandbox.yaml', import.meta.url));

/** Reads and validates a seed file; throws SeedError naming every problem with its position. */
export function loadSeed(file: string = DEFAULT_SEED_PATH): Seed {
  const seed = parseSeed(readSeedText(file), file);
  // The items file (seed-items.ts) is read and checked here too, before any database is touched.
  seedItemsOf(seed, dirname(file));
  return seed;
}

/** The seed's items file, read once (relative to `dir`); throws SeedError naming its problems. */
function seedItemsOf(seed: Seed, dir: string): SeedItems | null {
  const { items, problems } = readSeedItems(seed, dir);
  if (problems.length > 0) throw new SeedError(problems);
  return items;
}

/** The seed file's text, strictly UTF-8; its bytes are garbage once this returns (seeds may be large). */
function readSeedText(file: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    throw new SeedError([`${file}: cannot read: ${(err as Error).message}`]);
  }
  const { text, notUtf8 } = decodeUtf8(bytes);
  if (notUtf8) {
    const byte = notUtf8.byte.toString(16).padStart(2, '0');
    throw new SeedError([
      `${file}:${notUtf8.line}:${notUtf8.col}: not UTF-8 (byte 0x${byte} at offset ${notUtf8.offset}); save the seed as UTF-8`,
    ]);
  }
  return text;
}

/**
 * Anchors and aliases a seed may have, together. yaml resolves each alias by looking through every
 * anchor and alias before it, so a seed of many (not a plan-sized file: seeds may hold a million
 * items) would take hours; a handful is what a hand-written seed uses.
 */
export const MAX_SEED_ALIASES = 1000;
/**
 * yaml's own bound on alias expansion (its default, written out): an anchor may be used this many
 * times, counting the uses of the aliases inside it, which stops "billion laughs" seeds (anchors
 * whose values are lists of aliases of anchors ...) before they expand.
 */
export const MAX_ALIAS_EXPANSION = 100;

function limitMessage(over: YamlLimitHit): string {
  switch (over.limit) {
    case 'nesting':
      return `YAML nested deeper than ${over.max} levels (mappings and lists inside each other); a seed needs 4`;
    case 'aliases':
      return `more than ${over.max} anchors and aliases (&name, *name); write the values out`;
    case 'tokens':
      return `more than ${over.max} YAML tokens`;
  }
}

/**
 * Parses and validates seed YAML text against seedSchema. Every problem names its place
 * (`file:line:col: path: message`): YAML errors where the parser stopped, schema problems at the
 * field, unknown fields at their key, missing ones at the mapping that lacks them.
 */
export function parseSeed(text: string, file = '<seed>'): Seed {
  const lc = new LineCounter();
  const at = (offset: number | undefined) => {
    const p = lc.linePos(offset ?? 0);
    return `${file}:${p.line}:${p.col}`;
  };
  // Nesting is bounded (MAX_NESTING) and so are anchors and aliases; a seed's size is not.
  const { doc, firstAlias, over } = parseYaml(
    text,
    { lineCounter: lc, prettyErrors: false, uniqueKeys: true },
    { maxAliases: MAX_SEED_ALIASES },
  );
  if (over) throw new SeedError([`${at(over.offset)}: ${limitMessage(over)}`]);
  const yamlProblems = doc.errors.map((e) => `${at(e.pos[0])}: ${e.message.split('\n')[0]}`);
  if (yamlProblems.length) throw new SeedError(yamlProblems);
  if (!isMap(doc.contents)) throw new SeedError([`${at(0)}: a seed is a YAML mapping`]);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_EXPANSION });
  } catch (err) {
    // yaml's alias bound (or an alias it cannot resolve): a ReferenceError, which is the seed's fault.
    if (!(err instanceof ReferenceError)) throw err;
    throw new SeedError([
      `${at(firstAlias)}: the aliases (*name) from here on expand too far: yaml allows an anchor ${MAX_ALIAS_EXPANSION} uses, counting the aliases inside it ` +
        '(anchors of lists of aliases of anchors ... are a "billion laughs"); write the values out',
    ]);
  }
  const result = seedSchema.safeParse(data);
  if (result.success) return result.data;
  const problems = result.error.issues.flatMap((issue): [number, string][] => {
    const path = issue.path.filter((k): k is string | number => typeof k !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      const known = knownFields(path);
      return issue.keys.map((key) => {
        const offset = keyOffset(doc, path, key);
        return [
          offset,
          `${at(offset)}: ${[...path, key].join('.')}: unknown field "${key}"${known ? `; known fields: ${known}` : ''}`,
        ];
      });
    }
    const offset = nodeOffset(doc, path);
    return [[offset, `${at(offset)}: ${path.join('.')}: ${issue.message}`]];
  });
  // In file order (the sort is stable: problems at one place keep the schema's order).
  throw new SeedError(problems.sort((a, b) => a[0] - b[0]).map(([, p]) => p));
}

type Path = (string | number)[];
interface Ranged {
  range?: [number, number, number] | null;
}

/** Where the node at `path` starts, or its nearest existing ancestor (a missing field's mapping). */
function nodeOffset(doc: Document, path: Path): number {
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n), true) as Ranged | undefined;
    if (node?.range) return node.range[0];
  }
  return 0;
}

/** Where the key `key` of the mapping at `path` starts. */
function keyOffset(doc: Document, path: Path, key: string): number {
  const map = path.length === 0 ? doc.contents : doc.getIn(path, true);
  if (isMap(map)) {
    const pair = map.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
    const range = (pair?.key as Ranged | undefined)?.range;
    if (range) return range[0];
  }
  return nodeOffset(doc, path);
}

/** The fields the mapping at `path` allows, as the schema says (for the unknown-field message). */
function knownFields(path: Path): string | undefined {
  let schema: unknown = seedSchema;
  for (const step of [...path, null]) {
    // Through wrappers (optional, default, nullable, transform pipes, refinements) to the container.
    for (;;) {
      const def = (schema as { _zod?: { def?: Record<string, unknown> } })._zod?.def;
      if (!def) return undefined;
      if (def.innerType) schema = def.innerType;
      else if (def.type === 'pipe') schema = def.in;
      else break;
    }
    const def = (schema as { _zod: { def: Record<string, unknown> } })._zod.def;
    if (step === null) return def.type === 'object' ? Object.keys(def.shape as object).join(', ') : undefined;
    if (def.type === 'object') schema = (def.shape as Record<string, unknown>)[String(step)];
    else if (def.type === 'array') schema = def.element;
    else if (def.type === 'record') schema = def.valueType;
    else return undefined;
  }
  return undefined;
}

/** Writes configuration every start; writes data only when the database has none yet. */
export function applySeed(db: Db, seed: Seed, nowMs: number): { seeded: boolean } {
  const { weights, admin_mode, feature_flags, ...config } = seed.instance;
  setMeta(db, 'config', config satisfies InstanceConfig);
  if (getMeta(db, 'seeded')) return { seeded: false };
  const now = isoTime(nowMs);
  db.transaction(() => {
    const settings: InstanceSettings = {
      repository_storages_weighted: weights ?? {
        [config.storages.includes('default') ? 'default' : (config.storages[0] ?? 'default')]: 100,
      },
      admin_mode: admin_mode ?? false,
    };
    setMeta(db, 'settings', settings);
    const flag = db.prepare('INSERT OR REPLACE INTO features (name, value) VALUES (?, ?)');
    for (const [k, v] of Object.entries(feature_flags ?? {})) flag.run(k, JSON.stringify(v));
    const user = db.prepare(
      'INSERT INTO users (id, username, name, email, admin, state, bot, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    for (const u of seed.users)
      user.run(
        u.id,
        u.username,
        u.name ?? u.username,
        u.email ?? `${u.username}@example.com`,
        u.admin ? 1 : 0,
        u.state ?? 'active',
        0,
        now,
      );
    const app = db.prepare(
      'INSERT INTO applications (id, name, uid, secret, redirect_uri, confidential, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    for (const a of seed.applications)
      app.run(a.id, a.name, a.uid, a.secret, a.redirect_uri, a.confidential === false ? 0 : 1, now);
    insertCredentials(db, seed, nowMs);
    insertInventory(db, seed, now);
    insertGeoSites(db, seed);
    setMeta(db, 'seeded', true);
  })();
  return { seeded: true };
}

/**
 * Geo sites: the seed's `geo_sites`, or, where the tier has Geo, a primary and one
 * secondary. Data, like the inventory: written into an empty database only.
 */
function insertGeoSites(db: Db, seed: Seed): void {
  const site = db.prepare(
    'INSERT INTO geo_sites (id, name, url, is_primary, enabled, reachable) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const sites =
    seed.geo_sites ??
    (seed.instance.tier === 'free'
      ? []
      : [
          { id: 1, name: 'primary', url: 'http://primary.example.com/', primary: true },
          { id: 2, name: 'secondary', url: 'http://secondary.example.com/', primary: false },
        ]);
  const off = (s: object, field: 'enabled' | 'reachable') =>
    field in s && (s as Record<string, unknown>)[field] === false;
  for (const s of sites)
    site.run(s.id, s.name, s.url, s.primary ? 1 : 0, off(s, 'enabled') ? 0 : 1, off(s, 'reachable') ? 0 : 1);
}

function insertCredentials(db: Db, seed: Seed, nowMs: number): void {
  const now = isoTime(nowMs);
  const userId = (ref: string | number | undefined): number | null => {
    if (ref === undefined) return null;
    if (typeof ref === 'number') return ref;
    const row = db.prepare('SELECT id FROM users WHERE username = ?').get(ref) as { id: number } | undefined;
    return row?.id ?? null;
  };
  const botFor = (owner: string, id: number): number => {
    const username = `${owner}_${id}_bot`;
    const found = db.prepare('SELECT id FROM users WHERE username = ?').get(username) as { id: number } | undefined;
    if (found) return found.id;
    const next = ((db.prepare('SELECT max(id) m FROM users').get() as { m: number | null }).m ?? 0) + 1;
    db.prepare(
      'INSERT INTO users (id, username, name, email, admin, state, bot, created_at) VALUES (?, ?, ?, ?, 0, ?, 1, ?)',
    ).run(next, username, `${owner} ${id} bot`, `${username}@noreply.example.com`, 'active', now);
    return next;
  };
  const ins =
    db.prepare(`INSERT INTO credentials (type, value, refresh_token, user_id, project_id, group_id, application_id, name, scopes,
    expires_at, expires_at_ms, revoked, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const ttl = seed.instance.oauth_ttl_seconds * 1000;
  for (const c of seed.credentials) {
    let user = userId(c.user);
    if (c.type === 'project_access' && c.project !== undefined) user = botFor('project', c.project);
    if (c.type === 'group_access' && c.group !== undefined) user = botFor('group', c.group);
    const value = c.type === 'oauth' ? (c.access_token as string) : (c.value as string);
    ins.run(
      c.type,
      value,
      c.type === 'oauth' ? (c.refresh_token ?? null) : null,
      user,
      c.project ?? null,
      c.group ?? null,
      c.application ?? null,
      c.name ?? null,
      JSON.stringify(c.scopes ?? defaultScopes(c.type)),
      c.expires_at ?? null,
      c.type === 'oauth' ? nowMs + ttl : null,
      c.revoked ? 1 : 0,
      now,
      now,
    );
  }
}

function defaultScopes(type: CredentialType): string[] {
  switch (type) {
    case 'personal':
    case 'impersonation':
    case 'project_access':
    case 'group_access':
    case 'oauth':
      return ['api'];
    case 'deploy':
      return ['read_repository'];
    default:
      return [];
  }
}

const KIND_OF: Record<'projects' | 'snippets' | 'groups', ItemKind> = {
  projects: 'project',
  snippets: 'snippet',
  groups: 'group',
};

const ITEM_VALUES = '(?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)';
/** Parameters per generated row: id, visibility, storage, size_mb, commit_count, checksum. */
const GENERATED_PARAMS = 6;
/** Rows per INSERT: binding is the cost of seeding, so names and constants are built by SQLite. */
const BATCH_ROWS = 500;
/** Above this many generated items the storage index is built once after loading, not row by row. */
const REINDEX_THRESHOLD = 50_000;

/**
 * Buffers generated rows of one kind and writes them with multi-row INSERT ... SELECT FROM
 * (VALUES ...): only the six drawn values are bound; name, path and namespace come from the id.
 */
function createItemWriter(db: Db, kind: ItemKind, groupCount: number, now: string) {
  const select = (rows: number) => `INSERT INTO items (${ITEM_COLUMNS})
    SELECT '${kind}', i, '${kind}-' || i, '${kind}-' || i, ${kind === 'group' ? "''" : `'group-' || ((i - 1) % ${groupCount} + 1)`},
      column2, column3, 0, column4, column6, column5, 1, NULL, ?, ?
    -- JavaScript numbers bind as REAL: the cast keeps names free of a trailing ".0".
    FROM (SELECT CAST(column1 AS INTEGER) AS i, * FROM (VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?)').join(', ')}))`;
  const batch = db.prepare(select(BATCH_ROWS));
  const buffer: unknown[] = [now, now];
  return {
    add(id: number, visibility: string, storage: string, sizeMb: number, commits: number, checksum: string): void {
      buffer.push(id, visibility, storage, sizeMb, commits, checksum);
      if (buffer.length === 2 + BATCH_ROWS * GENERATED_PARAMS) {
        batch.run(buffer);
        buffer.length = 2;
      }
    },
    flush(): void {
      const rows = (buffer.length - 2) / GENERATED_PARAMS;
      if (rows > 0) db.prepare(select(rows)).run(buffer);
      buffer.length = 2;
    },
  };
}

/**
 * Marks generated projects hidden or pending deletion (`hidden_fraction`, `pending_delete_fraction`).
 * The draws come from their own generator, derived from random_seed, so a seed without these
 * fractions produces exactly the inventory it produced before they existed.
 */
function markProjectStates(db: Db, g: GenerateSpec): void {
  if (g.hidden_fraction <= 0 && g.pending_delete_fraction <= 0) return;
  const rand = createRandom(g.random_seed ^ 0x41d3e5);
  const mark = db.prepare("UPDATE items SET hidden = ?, pending_delete = ? WHERE kind = 'project' AND id = ?");
  for (let id = 1; id <= g.projects; id++) {
    const hidden = rand() < g.hidden_fraction;
    const pending = rand() < g.pending_delete_fraction;
    if (hidden || pending) mark.run(hidden ? 1 : 0, pending ? 1 : 0, id);
  }
}

/**
 * Snippet visibility: the snippets feature level of generated projects (`snippets_disabled_fraction`,
 * `snippets_private_fraction`) and which generated snippets belong to a generated project
 * (`project_snippet_fraction`, the project drawn uniformly). Their own generator, as for
 * markProjectStates, so the rest of the inventory is unchanged.
 */
function markSnippetFeatures(db: Db, g: GenerateSpec): void {
  const rand = createRandom(g.random_seed ^ 0x5a1e7);
  const disabled = g.snippets_disabled_fraction ?? 0;
  const members = g.snippets_private_fraction ?? 0;
  const attached = g.project_snippet_fraction ?? 0;
  if (g.projects > 0 && disabled + members > 0) {
    const level = db.prepare("UPDATE items SET snippets_access_level = ? WHERE kind = 'project' AND id = ?");
    for (let id = 1; id <= g.projects; id++) {
      const r = rand();
      if (r < disabled) level.run('disabled', id);
      else if (r < disabled + members) level.run('private', id);
    }
  }
  if (g.projects > 0 && attached > 0) {
    const attach = attachSnippet(db);
    for (let id = 1; id <= g.snippets; id++) {
      if (rand() < attached) attach(id, 1 + Math.floor(rand() * g.projects));
    }
  }
}

/** Makes snippet `snippetId` a snippet of project `projectId`: its namespace is the project's full path. */
function attachSnippet(db: Db): (snippetId: number, projectId: number) => void {
  const update = db.prepare(`UPDATE items SET project_id = ?,
    namespace = (SELECT CASE WHEN namespace = '' THEN path ELSE namespace || '/' || path END FROM items WHERE kind = 'project' AND id = ?)
    WHERE kind = 'snippet' AND id = ?`);
  return (snippetId, projectId) => {
    update.run(projectId, projectId, snippetId);
  };
}

function insertInventory(db: Db, seed: Seed, now: string): void {
  const g = seed.inventory.generate;
  // A seed built in code (not read by loadSeed) names its items file relative to the working directory.
  const fromFile = seedItemsOf(seed, process.cwd());
  const generated = (g ? g.projects + g.snippets + g.groups : 0) + (fromFile?.count ?? 0);
  // Maintaining (kind, storage, id) row by row costs random index writes; one sorted build is cheaper.
  const reindex = generated > REINDEX_THRESHOLD;
  if (reindex) db.exec('DROP INDEX IF EXISTS items_storage');
  if (g) {
    const rand = createRandom(g.random_seed);
    // Without shares, everything lands on the first configured storage.
    const entries = Object.entries(g.storages ?? { [seed.instance.storages[0] ?? 'default']: 1 });
    const total = entries.reduce((s, [, w]) => s + w, 0) || 1;
    const lastStorage = entries[entries.length - 1]?.[0] ?? 'default';
    const pickStorage = () => {
      let r = rand() * total;
      for (const [name, w] of entries) if ((r -= w) < 0) return name;
      return lastStorage;
    };
    const pickSize = () => {
      // Log-normal around the median, capped: most repositories are small, a few are huge.
      const u = Math.max(rand(), 1e-9);
      const v = rand();
      const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
      return Math.min(g.size_mb.max, Math.max(0.1, Math.round(g.size_mb.median * Math.exp(z) * 10) / 10));
    };
    const groupCount = Math.max(1, g.groups);
    // The order of draws is part of the seed format: the same random_seed gives the same inventory.
    for (const [kind, count] of [
      ['group', g.groups],
      ['project', g.projects],
      ['snippet', g.snippets],
    ] as const) {
      const writer = createItemWriter(db, kind, groupCount, now);
      for (let id = 1; id <= count; id++) {
        const commits = 1 + Math.floor(rand() * 500);
        const visibility = rand() < g.public_fraction ? 'public' : rand() < 0.5 ? 'internal' : 'private';
        const storage = pickStorage();
        writer.add(id, visibility, storage, pickSize(), commits, fakeChecksum(kind, id, commits));
      }
      writer.flush();
    }
    if (g.wiki_fraction)
      db.prepare("UPDATE items SET wiki_mb = round(size_mb * ?, 1) WHERE kind = 'project'").run(g.wiki_fraction);
    markProjectStates(db, g);
    markSnippetFeatures(db, g);
    drawForkNetworks(db, g);
  }
  if (fromFile) insertSeedItems(db, fromFile, now);
  // Explicit items replace generated ones (and those of the items file) with the same id.
  const upsert = db.prepare(`INSERT OR REPLACE INTO items (${ITEM_COLUMNS}) VALUES ${ITEM_VALUES}`);
  const setState = db.prepare('UPDATE items SET hidden = ?, pending_delete = ? WHERE kind = ? AND id = ?');
  const setWiki = db.prepare("UPDATE items SET wiki_mb = ? WHERE kind = 'project' AND id = ?");
  const setRefs = db.prepare(
    "UPDATE items SET branch_count = ?, tag_count = ?, content_drift = ? WHERE kind = 'project' AND id = ?",
  );
  const setLevel = db.prepare("UPDATE items SET snippets_access_level = ? WHERE kind = 'project' AND id = ?");
  const setRepositoryLevel = db.prepare(
    "UPDATE items SET repository_access_level = ? WHERE kind = 'project' AND id = ?",
  );
  const addMember = db.prepare(
    'INSERT OR IGNORE INTO project_members (project_id, user_id) SELECT ?, id FROM users WHERE id = ? OR username = ?',
  );
  const addFormer = db.prepare('INSERT OR REPLACE INTO redirect_routes (path, project_id) VALUES (?, ?)');
  const formerOwner = db.prepare('SELECT project_id FROM redirect_routes WHERE path = ?');
  const attach = attachSnippet(db);
  const setAuthor = db.prepare(
    "UPDATE items SET owner_id = (SELECT id FROM users WHERE id = ? OR username = ?) WHERE kind = 'snippet' AND id = ?",
  );
  for (const key of ['projects', 'snippets', 'groups'] as const) {
    const kind = KIND_OF[key];
    const items: ItemSeed[] = seed.inventory[key] ?? [];
    for (const it of items) {
      const commits = it.commit_count ?? 10;
      const name = it.name ?? `${kind}-${it.id}`;
      upsert.run(
        kind,
        it.id,
        name,
        name,
        kind === 'group' ? '' : (it.namespace ?? 'group-1'),
        it.visibility ?? 'private',
        it.storage,
        it.size_mb ?? 10,
        fakeChecksum(kind, it.id, commits),
        commits,
        1,
        null,
        now,
        now,
      );
      if (it.hidden || it.pending_delete) setState.run(it.hidden ? 1 : 0, it.pending_delete ? 1 : 0, kind, it.id);
      if (it.wiki_mb) setWiki.run(it.wiki_mb, it.id);
      if (it.branches !== undefined || it.tags !== undefined || it.content_drift)
        setRefs.run(it.branches ?? null, it.tags ?? null, it.content_drift ? 1 : 0, it.id);
      if (it.snippets_access_level) setLevel.run(it.snippets_access_level, it.id);
      if (it.repository_access_level) setRepositoryLevel.run(it.repository_access_level, it.id);
      for (const former of it.former_paths ?? []) {
        const owner = formerOwner.get(former) as { project_id: number } | undefined;
        if (owner && owner.project_id !== it.id)
          throw new SeedError([
            `inventory.projects: ${JSON.stringify(former)} is a former path of projects ${owner.project_id} and ${it.id}`,
          ]);
        addFormer.run(former, it.id);
      }
      for (const m of it.members ?? []) addMember.run(it.id, typeof m === 'number' ? m : -1, String(m));
      if (kind === 'snippet' && it.author !== undefined) setAuthor.run(it.author, String(it.author), it.id);
      // Projects come first in this loop, so an explicit project is in place before its snippets.
      if (kind === 'snippet' && it.project !== undefined) attach(it.id, it.project);
    }
  }
  // Fork networks: forks named by listed projects, then the pools of every network (seed-forks.ts).
  const forkProblems = applyListedForks(db, seed);
  if (forkProblems.length === 0) forkProblems.push(...seedPools(db, seed));
  if (forkProblems.length > 0) throw new SeedError(forkProblems);
  if (reindex) db.exec('CREATE INDEX items_storage ON items(kind, storage, id)');
}
