/**
 * The seed: instance configuration, users, OAuth applications, credentials and inventory.
 * `instance` is configuration (like gitlab.rb): re-applied on every start, so a restart picks up
 * e.g. impersonation_enabled. Everything else is data: written only into an empty database.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LineCounter, parseDocument, isMap } from 'yaml';
import type { Db, ItemKind } from './db.js';
import { getMeta, isoTime, setMeta } from './db.js';
import { ITEM_COLUMNS } from './inventory/items.js';

export type Tier = 'free' | 'premium' | 'ultimate';

/** Instance configuration: changes take effect at the next start. */
export interface InstanceConfig {
  version: string;
  tier: Tier;
  storages: string[];
  unreachable: string[];
  personal_access_token_prefix: string;
  previous_prefixes: string[];
  impersonation_enabled: boolean;
  oauth_ttl_seconds: number;
}

/** Application settings: seeded once, then changed through the API and kept in the database. */
export interface InstanceSettings {
  repository_storages_weighted: Record<string, number>;
  admin_mode: boolean;
}

export const CREDENTIAL_TYPES = [
  'personal', 'impersonation', 'project_access', 'group_access', 'oauth', 'session', 'job', 'deploy',
  'cluster_agent', 'pipeline_trigger', 'feed', 'runner', 'incoming_email', 'feature_flags_client',
] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

export interface CredentialSeed {
  type: CredentialType;
  value?: string;
  user?: string | number;
  project?: number;
  group?: number;
  application?: number;
  name?: string;
  scopes?: string[];
  expires_at?: string | null;
  revoked?: boolean;
  access_token?: string;
  refresh_token?: string;
}

export interface ItemSeed {
  id: number;
  name?: string;
  storage: string;
  visibility?: 'public' | 'internal' | 'private';
  size_mb?: number;
  commit_count?: number;
  namespace?: string;
}

export interface GenerateSpec {
  random_seed: number;
  projects: number;
  snippets: number;
  groups: number;
  public_fraction: number;
  storages: Record<string, number>;
  size_mb: { median: number; max: number };
}

export interface Seed {
  instance: InstanceConfig & Partial<InstanceSettings> & { feature_flags?: Record<string, boolean> };
  users: { id: number; username: string; admin?: boolean; name?: string; email?: string; state?: string }[];
  applications: { id: number; name: string; uid: string; secret: string; redirect_uri: string; confidential?: boolean }[];
  credentials: CredentialSeed[];
  inventory: { generate?: GenerateSpec; projects?: ItemSeed[]; snippets?: ItemSeed[]; groups?: ItemSeed[] };
  geo_sites?: { id: number; name: string; url: string; primary?: boolean }[];
}

/** A seed file that cannot be used; `problems` name file:line:col. */
export class SeedError extends Error {
  readonly code = 'SHARDMOVE_SEED_INVALID';
  constructor(readonly problems: string[]) {
    super(`invalid seed:\n  ${problems.join('\n  ')}`);
    this.name = 'SeedError';
  }
}

/** Path of the built-in seed (the README's example). */
export const DEFAULT_SEED_PATH = fileURLToPath(new URL('../../plans/sandbox.yaml', import.meta.url));

/** Reads and validates a seed file; throws SeedError naming every problem with its position. */
export function loadSeed(file: string = DEFAULT_SEED_PATH): Seed {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SeedError([`${file}: cannot read: ${(err as Error).message}`]);
  }
  return parseSeed(text, file);
}

/** Parses seed YAML text. */
export function parseSeed(text: string, file = '<seed>'): Seed {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  const problems: string[] = [];
  const at = (offset: number | undefined) => {
    const p = lc.linePos(offset ?? 0);
    return `${file}:${p.line}:${p.col}`;
  };
  for (const e of doc.errors) problems.push(`${at(e.pos[0])}: ${e.message.split('\n')[0]}`);
  if (problems.length) throw new SeedError(problems);
  const where = (path: (string | number)[]) => {
    const node = doc.getIn(path, true) as { range?: [number, number, number] } | undefined;
    return at(node?.range?.[0]);
  };
  const raw = doc.toJS() as Record<string, unknown> | null;
  if (!isMap(doc.contents) || !raw) throw new SeedError([`${at(0)}: a seed is a YAML mapping`]);
  const seed = validate(raw, (path, message) => problems.push(`${where(path)}: ${path.join('.')}: ${message}`));
  if (problems.length) throw new SeedError(problems);
  return seed;
}

type Report = (path: (string | number)[], message: string) => void;

function validate(raw: Record<string, unknown>, report: Report): Seed {
  const inst = (raw.instance ?? {}) as Record<string, unknown>;
  const str = (v: unknown, path: (string | number)[], dflt?: string): string => {
    if (v === undefined && dflt !== undefined) return dflt;
    if (typeof v !== 'string' || v === '') report(path, 'must be a non-empty string');
    return String(v ?? '');
  };
  const strList = (v: unknown, path: (string | number)[], dflt: string[]): string[] => {
    if (v === undefined) return dflt;
    if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) {
      report(path, 'must be a list of strings');
      return dflt;
    }
    return v as string[];
  };
  const bool = (v: unknown, path: (string | number)[], dflt: boolean): boolean => {
    if (v === undefined) return dflt;
    if (typeof v !== 'boolean') report(path, 'must be true or false');
    return v === true;
  };
  const int = (v: unknown, path: (string | number)[], dflt?: number, min = 0): number => {
    if (v === undefined && dflt !== undefined) return dflt;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) report(path, `must be an integer >= ${min}`);
    return Number(v);
  };

  const storages = strList(inst.storages, ['instance', 'storages'], ['default']);
  const version = str(inst.version, ['instance', 'version'], '17.11.0');
  if (!/^\d+\.\d+(\.\d+)?/.test(version)) report(['instance', 'version'], 'must look like 17.11.0');
  const tier = str(inst.tier, ['instance', 'tier'], 'ultimate') as Tier;
  if (!['free', 'premium', 'ultimate'].includes(tier)) report(['instance', 'tier'], 'must be free, premium or ultimate');
  const unreachable = strList(inst.unreachable, ['instance', 'unreachable'], []);
  for (const [i, s] of unreachable.entries()) if (!storages.includes(s)) report(['instance', 'unreachable', i], `unknown storage "${s}"`);
  let weights: Record<string, number> | undefined;
  if (inst.weights !== undefined) {
    if (typeof inst.weights !== 'object' || inst.weights === null || Array.isArray(inst.weights)) report(['instance', 'weights'], 'must be a mapping of storage to weight');
    else {
      weights = {};
      for (const [k, v] of Object.entries(inst.weights)) {
        if (!storages.includes(k)) report(['instance', 'weights', k], `unknown storage "${k}"`);
        weights[k] = int(v, ['instance', 'weights', k]);
        if (weights[k] > 100) report(['instance', 'weights', k], 'must be between 0 and 100');
      }
    }
  }
  const flags: Record<string, boolean> = {};
  if (inst.feature_flags !== undefined) {
    if (typeof inst.feature_flags !== 'object' || inst.feature_flags === null) report(['instance', 'feature_flags'], 'must be a mapping');
    else for (const [k, v] of Object.entries(inst.feature_flags)) flags[k] = bool(v, ['instance', 'feature_flags', k], false);
  }
  const instance: Seed['instance'] = {
    version,
    tier,
    storages,
    unreachable,
    personal_access_token_prefix: str(inst.personal_access_token_prefix, ['instance', 'personal_access_token_prefix'], 'glpat-'),
    previous_prefixes: strList(inst.previous_prefixes, ['instance', 'previous_prefixes'], []),
    impersonation_enabled: bool(inst.impersonation_enabled, ['instance', 'impersonation_enabled'], true),
    oauth_ttl_seconds: int(inst.oauth_ttl_seconds, ['instance', 'oauth_ttl_seconds'], 7200, 1),
    admin_mode: bool(inst.admin_mode, ['instance', 'admin_mode'], false),
    feature_flags: flags,
    ...(weights ? { repository_storages_weighted: weights } : {}),
  };

  const list = (key: string): Record<string, unknown>[] => {
    const v = raw[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      report([key], 'must be a list');
      return [];
    }
    return v as Record<string, unknown>[];
  };
  const users = list('users').map((u, i) => ({
    id: int(u.id, ['users', i, 'id'], undefined, 1),
    username: str(u.username, ['users', i, 'username']),
    admin: bool(u.admin, ['users', i, 'admin'], false),
    name: typeof u.name === 'string' ? u.name : undefined,
    email: typeof u.email === 'string' ? u.email : undefined,
    state: typeof u.state === 'string' ? u.state : undefined,
  }));
  const usernames = new Set(users.map((u) => u.username.toLowerCase()));
  const applications = list('applications').map((a, i) => ({
    id: int(a.id, ['applications', i, 'id'], undefined, 1),
    name: str(a.name, ['applications', i, 'name']),
    uid: str(a.uid, ['applications', i, 'uid']),
    secret: str(a.secret, ['applications', i, 'secret']),
    redirect_uri: str(a.redirect_uri, ['applications', i, 'redirect_uri']),
    confidential: bool(a.confidential, ['applications', i, 'confidential'], true),
  }));
  const credentials = list('credentials').map((c, i): CredentialSeed => {
    const type = c.type as CredentialType;
    if (!CREDENTIAL_TYPES.includes(type)) report(['credentials', i, 'type'], `must be one of ${CREDENTIAL_TYPES.join(', ')}`);
    if (type === 'oauth') {
      str(c.access_token, ['credentials', i, 'access_token']);
      str(c.refresh_token, ['credentials', i, 'refresh_token']);
      int(c.application, ['credentials', i, 'application'], undefined, 1);
    } else str(c.value, ['credentials', i, 'value']);
    if (c.user !== undefined && typeof c.user === 'string' && !usernames.has(c.user.toLowerCase())) report(['credentials', i, 'user'], `unknown user "${c.user}"`);
    if (c.scopes !== undefined) strList(c.scopes, ['credentials', i, 'scopes'], []);
    if (c.expires_at !== undefined && c.expires_at !== null && (typeof c.expires_at !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(c.expires_at))) {
      report(['credentials', i, 'expires_at'], 'must be a date YYYY-MM-DD (quote it in YAML)');
    }
    return c as unknown as CredentialSeed;
  });

  const inv = (raw.inventory ?? {}) as Record<string, unknown>;
  const inventory: Seed['inventory'] = {};
  if (inv.generate !== undefined) {
    const g = inv.generate as Record<string, unknown>;
    const p = ['inventory', 'generate'];
    const fractions = (g.storages ?? { [storages[0] ?? 'default']: 1 }) as Record<string, number>;
    for (const [k, v] of Object.entries(fractions)) {
      if (!storages.includes(k)) report([...p, 'storages', k], `unknown storage "${k}"`);
      if (typeof v !== 'number' || v < 0) report([...p, 'storages', k], 'must be a fraction >= 0');
    }
    const size = (g.size_mb ?? {}) as Record<string, unknown>;
    inventory.generate = {
      random_seed: int(g.random_seed, [...p, 'random_seed'], 42),
      projects: int(g.projects, [...p, 'projects'], 0),
      snippets: int(g.snippets, [...p, 'snippets'], 0),
      groups: int(g.groups, [...p, 'groups'], 0),
      public_fraction: typeof g.public_fraction === 'number' && g.public_fraction >= 0 && g.public_fraction <= 1 ? g.public_fraction : (g.public_fraction === undefined ? 0.2 : (report([...p, 'public_fraction'], 'must be between 0 and 1'), 0)),
      storages: fractions,
      size_mb: { median: typeof size.median === 'number' ? size.median : 40, max: typeof size.max === 'number' ? size.max : 4000 },
    };
  }
  for (const kind of ['projects', 'snippets', 'groups'] as const) {
    const items = inv[kind];
    if (items === undefined) continue;
    if (!Array.isArray(items)) {
      report(['inventory', kind], 'must be a list');
      continue;
    }
    inventory[kind] = (items as Record<string, unknown>[]).map((it, i) => {
      const s = str(it.storage, ['inventory', kind, i, 'storage']);
      if (!storages.includes(s)) report(['inventory', kind, i, 'storage'], `unknown storage "${s}"`);
      return { ...(it as object), id: int(it.id, ['inventory', kind, i, 'id'], undefined, 1), storage: s } as ItemSeed;
    });
  }
  const geo_sites = list('geo_sites').map((s, i) => ({
    id: int(s.id, ['geo_sites', i, 'id'], undefined, 1),
    name: str(s.name, ['geo_sites', i, 'name']),
    url: str(s.url, ['geo_sites', i, 'url']),
    primary: bool(s.primary, ['geo_sites', i, 'primary'], false),
  }));
  return { instance, users, applications, credentials, inventory, ...(raw.geo_sites !== undefined ? { geo_sites } : {}) };
}

/** A small, fast, seedable PRNG (mulberry32): the same seed gives the same inventory. */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex32 = (n: number): string => {
  const u = n >>> 0;
  return (HEX_BYTE[u >>> 24] as string) + (HEX_BYTE[(u >>> 16) & 255] as string) + (HEX_BYTE[(u >>> 8) & 255] as string) + (HEX_BYTE[u & 255] as string);
};

/**
 * A repository checksum stand-in: 40 hex characters derived from the item and its commit count.
 * Hot when seeding a million items, hence the byte table instead of toString(16).
 */
export function fakeChecksum(kind: string, id: number, commits: number): string {
  let h1 = 0x811c9dc5 ^ id;
  let h2 = 0x01000193 ^ commits;
  const s = `${kind}:${id}:${commits}`;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 16777619);
    h2 = Math.imul(h2 ^ c, 2246822519);
  }
  return hex32(h1) + hex32(h2) + hex32(h1 ^ h2) + hex32(Math.imul(h1, 31) ^ h2) + hex32(h2 * 7 + h1);
}

/** Writes configuration every start; writes data only when the database has none yet. */
export function applySeed(db: Db, seed: Seed, nowMs: number): { seeded: boolean } {
  const { repository_storages_weighted, admin_mode, feature_flags, ...config } = seed.instance;
  setMeta(db, 'config', config satisfies InstanceConfig);
  if (getMeta(db, 'seeded')) return { seeded: false };
  const now = isoTime(nowMs);
  db.transaction(() => {
    const settings: InstanceSettings = {
      repository_storages_weighted: repository_storages_weighted ?? { [config.storages.includes('default') ? 'default' : (config.storages[0] ?? 'default')]: 100 },
      admin_mode: admin_mode ?? false,
    };
    setMeta(db, 'settings', settings);
    const flag = db.prepare('INSERT OR REPLACE INTO features (name, value) VALUES (?, ?)');
    for (const [k, v] of Object.entries(feature_flags ?? {})) flag.run(k, JSON.stringify(v));
    const user = db.prepare('INSERT INTO users (id, username, name, email, admin, state, bot, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    for (const u of seed.users) user.run(u.id, u.username, u.name ?? u.username, u.email ?? `${u.username}@example.com`, u.admin ? 1 : 0, u.state ?? 'active', 0, now);
    const app = db.prepare('INSERT INTO applications (id, name, uid, secret, redirect_uri, confidential, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    for (const a of seed.applications) app.run(a.id, a.name, a.uid, a.secret, a.redirect_uri, a.confidential === false ? 0 : 1, now);
    insertCredentials(db, seed, nowMs);
    insertInventory(db, seed, now);
    const site = db.prepare('INSERT INTO geo_sites (id, name, url, is_primary) VALUES (?, ?, ?, ?)');
    const sites = seed.geo_sites ?? (config.tier === 'free' ? [] : [
      { id: 1, name: 'primary', url: 'http://primary.example.com/', primary: true },
      { id: 2, name: 'secondary', url: 'http://secondary.example.com/', primary: false },
    ]);
    for (const s of sites) site.run(s.id, s.name, s.url, s.primary ? 1 : 0);
    setMeta(db, 'seeded', true);
  })();
  return { seeded: true };
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
    db.prepare('INSERT INTO users (id, username, name, email, admin, state, bot, created_at) VALUES (?, ?, ?, ?, 0, ?, 1, ?)').run(
      next, username, `${owner} ${id} bot`, `${username}@noreply.example.com`, 'active', now);
    return next;
  };
  const ins = db.prepare(`INSERT INTO credentials (type, value, refresh_token, user_id, project_id, group_id, application_id, name, scopes,
    expires_at, expires_at_ms, revoked, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const ttl = seed.instance.oauth_ttl_seconds * 1000;
  for (const c of seed.credentials) {
    let user = userId(c.user);
    if (c.type === 'project_access' && c.project !== undefined) user = botFor('project', c.project);
    if (c.type === 'group_access' && c.group !== undefined) user = botFor('group', c.group);
    const value = c.type === 'oauth' ? (c.access_token as string) : (c.value as string);
    ins.run(c.type, value, c.type === 'oauth' ? (c.refresh_token ?? null) : null, user, c.project ?? null, c.group ?? null,
      c.application ?? null, c.name ?? null, JSON.stringify(c.scopes ?? defaultScopes(c.type)), c.expires_at ?? null,
      c.type === 'oauth' ? nowMs + ttl : null, c.revoked ? 1 : 0, now, now);
  }
}

function defaultScopes(type: CredentialType): string[] {
  switch (type) {
    case 'personal': case 'impersonation': case 'project_access': case 'group_access': case 'oauth': return ['api'];
    case 'deploy': return ['read_repository'];
    default: return [];
  }
}

const KIND_OF: Record<'projects' | 'snippets' | 'groups', ItemKind> = { projects: 'project', snippets: 'snippet', groups: 'group' };

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

function insertInventory(db: Db, seed: Seed, now: string): void {
  const g = seed.inventory.generate;
  const generated = g ? g.projects + g.snippets + g.groups : 0;
  // Maintaining (kind, storage, id) row by row costs random index writes; one sorted build is cheaper.
  const reindex = generated > REINDEX_THRESHOLD;
  if (reindex) db.exec('DROP INDEX IF EXISTS items_storage');
  if (g) {
    const rand = createRandom(g.random_seed);
    const entries = Object.entries(g.storages);
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
    for (const [kind, count] of [['group', g.groups], ['project', g.projects], ['snippet', g.snippets]] as const) {
      const writer = createItemWriter(db, kind, groupCount, now);
      for (let id = 1; id <= count; id++) {
        const commits = 1 + Math.floor(rand() * 500);
        const visibility = rand() < g.public_fraction ? 'public' : (rand() < 0.5 ? 'internal' : 'private');
        const storage = pickStorage();
        writer.add(id, visibility, storage, pickSize(), commits, fakeChecksum(kind, id, commits));
      }
      writer.flush();
    }
  }
  // Explicit items replace generated ones with the same id.
  const upsert = db.prepare(`INSERT OR REPLACE INTO items (${ITEM_COLUMNS}) VALUES ${ITEM_VALUES}`);
  for (const key of ['projects', 'snippets', 'groups'] as const) {
    const kind = KIND_OF[key];
    for (const it of seed.inventory[key] ?? []) {
      const commits = it.commit_count ?? 10;
      const name = it.name ?? `${kind}-${it.id}`;
      upsert.run(kind, it.id, name, name, kind === 'group' ? '' : (it.namespace ?? 'group-1'), it.visibility ?? 'private', it.storage,
        it.size_mb ?? 10, fakeChecksum(kind, it.id, commits), commits, 1, null, now, now);
    }
  }
  if (reindex) db.exec('CREATE INDEX items_storage ON items(kind, storage, id)');
}
