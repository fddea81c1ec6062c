/**
 * What a seed file may contain: the zod schema, the types derived from it, and the rules across
 * fields (storages and users named elsewhere must exist; OAuth credentials carry a pair, others a
 * value). Every mapping is strict: an unknown field is an error, not silently ignored. seed.ts
 * reads the file and places each problem at its file:line:col.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { storageFilesystemRules, storageFilesystemsField } from './seed-filesystems.js';
import { diskBusyField, diskRules, storageBandwidthField } from './seed-disks.js';
import { RATE_LIMIT_KEYS } from './instance/rate-limit-keys.js';
import type { RateLimitKey } from './instance/rate-limit-keys.js';

export const CREDENTIAL_TYPES = [
  'personal',
  'impersonation',
  'project_access',
  'group_access',
  'oauth',
  'session',
  'job',
  'deploy',
  'cluster_agent',
  'pipeline_trigger',
  'feed',
  'runner',
  'incoming_email',
  'feature_flags_client',
] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

const TIERS = ['free', 'premium', 'ultimate'] as const;
export type Tier = (typeof TIERS)[number];

/** `ee`: the Enterprise Edition build (with a licence tier); `ce`: the Community Edition, no `ee/` code. */
const EDITIONS = ['ee', 'ce'] as const;
export type Edition = (typeof EDITIONS)[number];

const text = z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must be a non-empty string' });
const int = (min: number) => {
  const error = `must be an integer >= ${min}`;
  return z.number({ error }).int({ error }).min(min, { error });
};
const bool = z.boolean({ error: 'must be true or false' });
const strings = z.array(z.string({ error: 'must be a string' }), { error: 'must be a list of strings' });
/** A list that YAML may leave empty (`users:` with nothing after it). */
const listOf = <T extends z.ZodType>(item: T) =>
  z
    .array(item, { error: 'must be a list' })
    .nullish()
    .transform((v) => v ?? []);

const fraction = z
  .number({ error: 'must be between 0 and 1' })
  .min(0, { error: 'must be between 0 and 1' })
  .max(1, { error: 'must be between 0 and 1' });

// --- The instance's monitoring allowlist and Geo sites: configuration, in one block. ---

/** GitLab's default `monitoring.ip_whitelist` (Omnibus `gitlab_rails['monitoring_whitelist']`). */
export const DEFAULT_MONITORING_ALLOWLIST = ['127.0.0.0/8', '::1/128'];

const CIDR = 'must be an IP address or a CIDR such as 10.0.0.0/8 or ::1/128';
/** An address or subnet as GitLab's IPAddr.new accepts it: `a.b.c.d[/n]` or an IPv6 address[/n]. */
const cidr = z.string({ error: CIDR }).refine((v) => parseCidr(v) !== null, { error: CIDR });

/** Splits `10.0.0.0/8` into address, prefix and family (a bare address is /32 or /128), or null. */
export function parseCidr(value: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', prefixText, extra] = value.trim().split('/');
  if (extra !== undefined) return null;
  const version = isIP(address);
  if (version === 0) return null;
  const family = version === 4 ? 'ipv4' : 'ipv6';
  const max = version === 4 ? 32 : 128;
  if (prefixText === undefined) return { address, prefix: max, family };
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) return null;
  return { address, prefix: Number(prefixText), family };
}

/** Fields of `instance` for health checks and Geo (configuration, applied at every start). */
const instanceHealthGeoFields = {
  /**
   * Clients allowed to read /-/health, /-/liveness and /-/readiness (GitLab's monitoring IP
   * allowlist); absent means DEFAULT_MONITORING_ALLOWLIST (optional in the type, so configs built
   * by hand stay valid).
   */
  monitoring_allowlist: z.array(cidr, { error: 'must be a list of IP addresses or CIDRs' }).optional(),
};

const geoSiteSchema = z.strictObject({
  id: int(1),
  name: text,
  url: text.refine((v) => /^https?:\/\/[^/\s]+/.test(v), { error: 'must be an http(s) URL' }),
  primary: bool.optional(),
  /** A disabled site does not replicate (GitLab's `enabled: false`); default true. */
  enabled: bool.optional(),
  /** `false`: the primary cannot reach the site, so the primary's node proxy gets no answer from it (what the proxy answers then: instance/geo.ts); default true. */
  reachable: bool.optional(),
});

/** Geo sites: unique ids, names and hosts (a request's Host picks the site it is sent to), one primary at most. */
const geoSitesSchema = z.array(geoSiteSchema, { error: 'must be a list' }).superRefine((sites, ctx) => {
  const seen = { id: new Set<number>(), name: new Set<string>(), host: new Set<string>() };
  let primaries = 0;
  for (const [i, site] of sites.entries()) {
    const host = siteHost(site.url);
    if (seen.id.has(site.id))
      ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate site id ${site.id}` });
    if (seen.name.has(site.name))
      ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate site name "${site.name}"` });
    if (host !== null && seen.host.has(host))
      ctx.addIssue({ code: 'custom', path: [i, 'url'], message: `another site has the host ${host}` });
    seen.id.add(site.id);
    seen.name.add(site.name);
    if (host !== null) seen.host.add(host);
    if (site.primary && ++primaries > 1)
      ctx.addIssue({ code: 'custom', path: [i, 'primary'], message: 'only one site can be the primary' });
  }
});

/** The `host[:port]` of a site URL, lower case, or null when it is not a URL. */
export function siteHost(url: string): string | null {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return null;
  }
}

// --- End of the monitoring allowlist and Geo block. ---

const instanceFields = z.strictObject(
  {
    version: text.regex(/^\d+\.\d+(\.\d+)?/, { error: 'must look like 17.11.0' }).default('17.11.0'),
    // Without a default here: the default depends on the edition (see instanceSchema).
    tier: z.enum(TIERS, { error: 'must be free, premium or ultimate' }).optional(),
    storages: strings.default(['default']),
    unreachable: strings.default([]),
    personal_access_token_prefix: text.default('glpat-'),
    previous_prefixes: strings.default([]),
    impersonation_enabled: bool.default(true),
    oauth_ttl_seconds: int(1).default(7200),
    // Initial data, not configuration: written only into an empty database.
    weights: z
      .record(z.string(), int(0).max(100, { error: 'must be between 0 and 100' }), {
        error: 'must be a mapping of storage to weight',
      })
      .optional(),
    admin_mode: bool.default(false),
    feature_flags: z.record(z.string(), bool, { error: 'must be a mapping' }).default({}),
    /**
     * GitLab's application rate limits by their keys (`projects_api: 2000`, 0 = off), over GitLab's
     * defaults; which release checks them is in ./instance/rate-limits.ts.
     */
    rate_limits: z
      .partialRecord(z.enum(RATE_LIMIT_KEYS as [RateLimitKey, ...RateLimitKey[]]), int(0), {
        error: `must be a mapping of ${RATE_LIMIT_KEYS.join(', ')} to a number of requests (0 = off)`,
      })
      .optional(),
    // Inventory fidelity: the edition, and projects GitLab cannot render in a listing.
    edition: z.enum(EDITIONS, { error: 'must be ee or ce' }).default('ee'),
    /** Project ids whose listing pages answer 500 (an entity GitLab fails to serialise). */
    unlistable: z.array(int(1), { error: 'must be a list of project ids' }).default([]),
    ...instanceHealthGeoFields,
    /**
     * Room on each storage: the size in bytes of the filesystem each storage lives on. Storages left out have no
     * known size: they never run out of room and the sandbox's node_exporter leaves them out of the
     * filesystem metrics. Optional in the type, so configurations built by hand stay valid.
     */
    storage_capacity: z.record(z.string(), int(0), { error: 'must be a mapping of storage to bytes' }).optional(),
    /** The filesystem each storage lives on, as node_exporter labels it (./seed-filesystems.ts). */
    storage_filesystems: storageFilesystemsField,
    /** Each storage's disk bandwidth, bytes per second (./seed-disks.ts); storages left out are not limited. */
    storage_bandwidth: storageBandwidthField,
    /** Windows in which another tenant takes part of a disk's bandwidth (./seed-disks.ts). */
    disk_busy: diskBusyField,
  },
  { error: 'must be a mapping' },
);

/**
 * The instance, with the tier defaulted by edition: an EE build defaults to ultimate; the Community
 * Edition has no licence, so it is `free` (every licensed feature absent) and naming a paid tier is
 * an error rather than a setting that silently does nothing.
 */
const instanceSchema = instanceFields
  .superRefine((i, ctx) => {
    if (i.edition === 'ce' && i.tier !== undefined && i.tier !== 'free') {
      ctx.addIssue({
        code: 'custom',
        path: ['tier'],
        message: 'the community edition has no licence tier: leave tier out or set free',
      });
    }
  })
  .transform((i) => ({ ...i, tier: i.tier ?? ((i.edition === 'ce' ? 'free' : 'ultimate') as Tier) }));

const userSchema = z.strictObject({
  id: int(1),
  username: text,
  admin: bool.optional(),
  name: z.string().optional(),
  email: z.string().optional(),
  state: z.string().optional(),
});

const applicationSchema = z.strictObject({
  id: int(1),
  name: text,
  uid: text,
  secret: text,
  redirect_uri: text,
  confidential: bool.optional(),
});

const EXPIRES_AT = 'must be a date YYYY-MM-DD (quote it in YAML)';

const credentialSchema = z.strictObject({
  type: z.enum(CREDENTIAL_TYPES, { error: `must be one of ${CREDENTIAL_TYPES.join(', ')}` }),
  /** The literal secret; OAuth credentials have access_token and refresh_token instead. */
  value: text.optional(),
  /** A username or a user id. */
  user: z.union([z.string(), z.number()], { error: 'must be a username or a user id' }).optional(),
  project: int(1).optional(),
  group: int(1).optional(),
  application: int(1).optional(),
  name: z.string().optional(),
  scopes: strings.optional(),
  expires_at: z
    .string({ error: EXPIRES_AT })
    .regex(/^\d{4}-\d{2}-\d{2}$/, { error: EXPIRES_AT })
    .nullable()
    .optional(),
  revoked: bool.optional(),
  access_token: text.optional(),
  refresh_token: text.optional(),
});

const itemSchema = z.strictObject({
  id: int(1),
  name: z.string().optional(),
  storage: text,
  visibility: z.enum(['public', 'internal', 'private'], { error: 'must be public, internal or private' }).optional(),
  size_mb: z.number({ error: 'must be a number' }).nonnegative({ error: 'must be a number >= 0' }).optional(),
  commit_count: int(0).optional(),
  /** Projects only: the group path (default group-1). */
  namespace: z.string().optional(),
});

/** GitLab's ProjectFeature levels a project's snippets feature can take (`snippets_access_level`). */
export const SNIPPETS_ACCESS_LEVELS = ['disabled', 'private', 'enabled'] as const;
export type SnippetsAccessLevel = (typeof SNIPPETS_ACCESS_LEVELS)[number];
/** The same levels for the repository feature (`repository_access_level`). */
export type RepositoryAccessLevel = SnippetsAccessLevel;

// Inventory fidelity: deletion and hiding states, per kind as GitLab has them.
/** Projects may be hidden (EE) or pending deletion: left out of GET /projects, still movable. */
const projectSchema = itemSchema.extend({
  hidden: bool.optional(),
  pending_delete: bool.optional(),
  // Snippet visibility: who may see the project's snippets. `private` is GitLab's "Only project members".
  snippets_access_level: z.enum(SNIPPETS_ACCESS_LEVELS, { error: 'must be disabled, private or enabled' }).optional(),
  /**
   * Who has `read_code` (the repository, `forks_count` and `readme_url` in the entity): `private`
   * is "Only project members"; `disabled` takes it from everyone, administrators included.
   */
  repository_access_level: z.enum(SNIPPETS_ACCESS_LEVELS, { error: 'must be disabled, private or enabled' }).optional(),
  /** Users (username or id) who are members of the project. */
  members: z.array(z.union([z.string(), z.number()]), { error: 'must be a list of usernames or user ids' }).optional(),
  /**
   * Full paths the project had before a rename or transfer (`group-1/old-name`): from 16.7 the API
   * redirects a GET that names one to the project, and refuses every other method (405).
   */
  former_paths: z
    .array(z.string().regex(/^[^/\s]+(\/[^/\s]+)+$/, { error: 'must be a full path such as group-1/old-name' }), {
      error: 'must be a list of full paths such as group-1/old-name',
    })
    .optional(),
  /** Branches and tags in the repository (GET .../repository/branches and tags; default: a few, by id). */
  branches: int(1).optional(),
  tags: int(0).optional(),
  /**
   * A seeded fault: the project's next move loses its newest commit and newest tag on the destination
   * although GitLab's checksum passed (what `verify.content` catches; inventory/refs.ts).
   */
  content_drift: bool.optional(),
  /** Size of the project's wiki repository in MB (`statistics.wiki_size`; default 0: no wiki). */
  wiki_mb: z.number({ error: 'must be a number' }).nonnegative({ error: 'must be a number >= 0' }).optional(),
  /** Fork networks: the project this one is a fork of, by id or full path (`group-1/project-3`). */
  forked_from: z
    .union([int(1), text], { error: 'must be a project id or a full path such as group-1/project-3' })
    .optional(),
});
/** A snippet with `project` is that project's snippet (GitLab's ProjectSnippet); without, a personal one. */
const snippetSchema = itemSchema.extend({
  project: int(1).optional(),
  /** Who wrote it (a username or a user id; default root, user 1): a personal snippet's namespace. */
  author: z.union([z.string(), z.number()], { error: 'must be a username or a user id' }).optional(),
});
/** Groups may be pending deletion: GitLab still lists and shows them. Snippets have no such state. */
const groupSchema = itemSchema.extend({
  pending_delete: bool.optional(),
});

const generateSchema = z.strictObject(
  {
    random_seed: int(0).default(42),
    projects: int(0).default(0),
    snippets: int(0).default(0),
    groups: int(0).default(0),
    public_fraction: fraction.default(0.2),
    /** Share of generated projects that are hidden (EE) / pending deletion; drawn apart from the rest. */
    hidden_fraction: fraction.default(0),
    pending_delete_fraction: fraction.default(0),
    /**
     * Snippet visibility: share of generated snippets that belong to a generated project, and shares of
     * generated projects whose snippets feature is disabled or members-only; each drawn apart.
     * Optional rather than defaulted, so generate specs written in code stay complete without them.
     */
    project_snippet_fraction: fraction.optional(),
    snippets_disabled_fraction: fraction.optional(),
    snippets_private_fraction: fraction.optional(),
    /** Storage -> relative share; default: all on the first configured storage. */
    storages: z
      .record(z.string(), z.number({ error: 'must be a fraction >= 0' }).min(0, { error: 'must be a fraction >= 0' }), {
        error: 'must be a mapping',
      })
      .optional(),
    /**
     * Fork networks: `count` of them among the generated projects, each a root and 1 to `max_forks`
     * forks (forks of the root or of its forks), drawn from their own generator (seed-forks.ts).
     */
    fork_networks: z
      .strictObject(
        {
          count: int(0),
          max_forks: int(1),
        },
        { error: 'must be a mapping with count and max_forks' },
      )
      .optional(),
    /**
     * Each generated project's wiki as a share of its repository's `size_mb` (default 0: no wikis).
     * A share, not a draw: the same random_seed keeps giving the same inventory.
     */
    wiki_fraction: z.number({ error: 'must be a number >= 0' }).min(0, { error: 'must be a number >= 0' }).optional(),
    // Sizes are drawn around the median and capped at max: 0 or below made every size 0.1 MB, or negative.
    size_mb: z
      .strictObject(
        {
          median: z.number({ error: 'must be a number > 0' }).positive({ error: 'must be a number > 0' }).default(40),
          max: z.number({ error: 'must be a number > 0' }).positive({ error: 'must be a number > 0' }).default(4000),
        },
        { error: 'must be a mapping' },
      )
      .default({ median: 40, max: 4000 }),
  },
  { error: 'must be a mapping' },
);

const inventorySchema = z.strictObject(
  {
    generate: generateSchema.optional(),
    projects: z.array(projectSchema, { error: 'must be a list' }).optional(),
    snippets: z.array(snippetSchema, { error: 'must be a list' }).optional(),
    groups: z.array(groupSchema, { error: 'must be a list' }).optional(),
    /** A file of one item per line beside the seed, for inventories too large for YAML (seed-items.ts). */
    items_file: text.optional(),
  },
  { error: 'must be a mapping' },
);

/** The seed file's top level, with the cross-field rules. */
export const seedSchema = z
  .strictObject(
    {
      instance: instanceSchema.nullish().transform((v) => v ?? instanceSchema.parse({})),
      users: listOf(userSchema),
      applications: listOf(applicationSchema),
      credentials: listOf(credentialSchema),
      inventory: inventorySchema.nullish().transform((v) => v ?? {}),
      geo_sites: geoSitesSchema.optional(),
    },
    { error: 'a seed is a YAML mapping' },
  )
  .superRefine(
    (seed, ctx) => crossFieldRules(seed, (path, message) => ctx.addIssue({ code: 'custom', path, message })),
    {
      // Also when a field has a problem of its own, so that one run reports every problem.
      when: (payload) => typeof payload.value === 'object' && payload.value !== null,
    },
  );

/** A parsed seed: what `seed.yaml` says, with every default filled in. */
export type Seed = z.output<typeof seedSchema>;
export type ItemSeed = z.output<typeof itemSchema> & {
  hidden?: boolean;
  pending_delete?: boolean;
  snippets_access_level?: SnippetsAccessLevel;
  wiki_mb?: number;
  branches?: number;
  tags?: number;
  content_drift?: boolean;
  repository_access_level?: RepositoryAccessLevel;
  former_paths?: string[];
  members?: (string | number)[];
  project?: number;
  author?: string | number;
  forked_from?: number | string;
};
export type GenerateSpec = z.output<typeof generateSchema>;

/**
 * Instance configuration (the seed's `instance` without the initial data): applied at every
 * start, so changes take effect at the next one.
 */
export type InstanceConfig = Omit<Seed['instance'], 'weights' | 'admin_mode' | 'feature_flags'>;

/** Application settings: seeded once, then changed through the API and kept in the database. */
export interface InstanceSettings {
  repository_storages_weighted: Record<string, number>;
  admin_mode: boolean;
}

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const fields = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/**
 * The rules across fields: storages that unreachable, weights, generated shares and explicit items
 * name must be configured; a credential's user (by name) must exist; OAuth credentials need their
 * pair and application, all others a value. They also run on a seed with other problems, so they
 * read it defensively.
 */
function crossFieldRules(seed: unknown, problem: (path: (string | number)[], message: string) => void): void {
  const instance = fields(fields(seed).instance);
  const inventory = fields(fields(seed).inventory);
  const storages = Array.isArray(instance.storages) ? instance.storages : ['default'];
  const knownStorage = (name: unknown, path: (string | number)[]) => {
    if (typeof name === 'string' && !storages.includes(name)) problem(path, `unknown storage "${name}"`);
  };
  for (const [i, s] of list(instance.unreachable).entries()) knownStorage(s, ['instance', 'unreachable', i]);
  for (const k of Object.keys(fields(instance.weights))) knownStorage(k, ['instance', 'weights', k]);
  for (const k of Object.keys(fields(instance.storage_capacity))) knownStorage(k, ['instance', 'storage_capacity', k]);
  storageFilesystemRules(instance, problem);
  diskRules(instance, problem);
  for (const k of Object.keys(fields(fields(inventory.generate).storages)))
    knownStorage(k, ['inventory', 'generate', 'storages', k]);
  for (const kind of ['projects', 'snippets', 'groups'] as const) {
    for (const [i, item] of list(inventory[kind]).entries())
      knownStorage(fields(item).storage, ['inventory', kind, i, 'storage']);
  }
  inventoryStateRules(instance, inventory, problem);
  const usernames = new Set(
    list(fields(seed).users)
      .map((u) => fields(u).username)
      .filter((n) => typeof n === 'string')
      .map((n) => n.toLowerCase()),
  );
  const userIds = new Set(
    list(fields(seed).users)
      .map((u) => fields(u).id)
      .filter((n) => typeof n === 'number'),
  );
  projectSnippetRules(inventory, usernames, userIds, problem);
  forkRules(inventory, problem);
  for (const [i, raw] of list(fields(seed).credentials).entries()) {
    const c = fields(raw);
    const missing = (field: string, message: string) => {
      if (c[field] === undefined) problem(['credentials', i, field], message);
    };
    if (c.type === 'oauth') {
      missing('access_token', 'must be a non-empty string');
      missing('refresh_token', 'must be a non-empty string');
      missing('application', 'must be an integer >= 1');
    } else missing('value', 'must be a non-empty string');
    if (typeof c.user === 'string' && !usernames.has(c.user.toLowerCase()))
      problem(['credentials', i, 'user'], `unknown user "${c.user}"`);
    if (typeof c.user === 'number' && !userIds.has(c.user))
      problem(['credentials', i, 'user'], `unknown user id ${c.user}`);
    // A credential without its owner would be accepted by the seed and then never authenticate.
    const needs = typeof c.type === 'string' ? OWNER_NEEDED[c.type as CredentialType] : undefined;
    for (const field of needs ?? []) {
      if (c[field] === undefined)
        problem(['credentials', i, field], `a ${String(c.type)} credential needs ${field}: ${OWNER_REASON[field]}`);
    }
  }
}

/** What a credential must name to be usable (docs/sandbox.md lists these in parentheses). */
const OWNER_NEEDED: Partial<Record<CredentialType, ('user' | 'project' | 'group')[]>> = {
  personal: ['user'],
  impersonation: ['user'],
  oauth: ['user'],
  session: ['user'],
  feed: ['user'],
  incoming_email: ['user'],
  // A job token acts as the user who runs the job, in that job's project.
  job: ['user', 'project'],
  project_access: ['project'],
  group_access: ['group'],
};
const OWNER_REASON = {
  user: 'the user it authenticates as',
  project: 'the project it belongs to',
  group: 'the group it belongs to',
} as const;

// Inventory fidelity: rules for hidden, pending-delete and unlistable projects.
function inventoryStateRules(
  instance: Record<string, unknown>,
  inventory: Record<string, unknown>,
  problem: (path: (string | number)[], message: string) => void,
): void {
  const ce = instance.edition === 'ce';
  const CE_HIDDEN = 'hidden projects exist only in the enterprise edition (edition: ee)';
  const generate = fields(inventory.generate);
  if (ce && typeof generate.hidden_fraction === 'number' && generate.hidden_fraction > 0)
    problem(['inventory', 'generate', 'hidden_fraction'], CE_HIDDEN);
  const projects = list(inventory.projects);
  for (const [i, p] of projects.entries()) {
    if (ce && fields(p).hidden === true) problem(['inventory', 'projects', i, 'hidden'], CE_HIDDEN);
  }
  const generated = typeof generate.projects === 'number' ? generate.projects : 0;
  const explicit = new Set(projects.map((p) => fields(p).id));
  // With an items file, seed-items.ts checks the rest against the file's projects.
  if (inventory.items_file !== undefined) return;
  for (const [i, id] of list(instance.unlistable).entries()) {
    if (typeof id === 'number' && id > generated && !explicit.has(id))
      problem(['instance', 'unlistable', i], `unknown project ${id}`);
  }
}

// Snippet visibility: project snippets, their projects' feature levels and members.
function projectSnippetRules(
  inventory: Record<string, unknown>,
  usernames: Set<string>,
  userIds: Set<unknown>,
  problem: (path: (string | number)[], message: string) => void,
): void {
  const generate = fields(inventory.generate);
  const generated = typeof generate.projects === 'number' ? generate.projects : 0;
  const projects = list(inventory.projects);
  const explicit = new Set(projects.map((p) => fields(p).id));
  for (const [i, sn] of list(inventory.snippets).entries()) {
    const id = fields(sn).project;
    if (typeof id === 'number' && id > generated && !explicit.has(id))
      problem(['inventory', 'snippets', i, 'project'], `unknown project ${id}`);
  }
  for (const [i, sn] of list(inventory.snippets).entries()) {
    const a = fields(sn).author;
    if (typeof a === 'string' && !usernames.has(a.toLowerCase()))
      problem(['inventory', 'snippets', i, 'author'], `unknown user "${a}"`);
    if (typeof a === 'number' && !userIds.has(a))
      problem(['inventory', 'snippets', i, 'author'], `unknown user id ${a}`);
  }
  for (const [i, p] of projects.entries()) {
    for (const [j, m] of list(fields(p).members).entries()) {
      if (typeof m === 'string' && !usernames.has(m.toLowerCase()))
        problem(['inventory', 'projects', i, 'members', j], `unknown user "${m}"`);
      if (typeof m === 'number' && !userIds.has(m))
        problem(['inventory', 'projects', i, 'members', j], `unknown user id ${m}`);
    }
  }
  const share = (name: string) => (typeof generate[name] === 'number' ? generate[name] : 0);
  if (share('project_snippet_fraction') > 0 && generated === 0) {
    problem(
      ['inventory', 'generate', 'project_snippet_fraction'],
      'project snippets need generated projects (generate.projects > 0)',
    );
  }
  if (share('snippets_disabled_fraction') + share('snippets_private_fraction') > 1) {
    problem(
      ['inventory', 'generate', 'snippets_private_fraction'],
      'snippets_disabled_fraction + snippets_private_fraction must not exceed 1',
    );
  }
}

// Fork networks: which project `forked_from` names, and that the generated ones fit.
function forkRules(
  inventory: Record<string, unknown>,
  problem: (path: (string | number)[], message: string) => void,
): void {
  const generate = fields(inventory.generate);
  const generated = typeof generate.projects === 'number' ? generate.projects : 0;
  const networks = fields(generate.fork_networks);
  if (typeof networks.count === 'number' && typeof networks.max_forks === 'number' && networks.count > 0) {
    const most = networks.count * (1 + networks.max_forks);
    if (most > generated) {
      problem(
        ['inventory', 'generate', 'fork_networks'],
        `${networks.count} networks of up to ${1 + networks.max_forks} projects need up to ${most} generated projects (generate.projects is ${generated})`,
      );
    }
  }
  const projects = list(inventory.projects);
  const groups = typeof generate.groups === 'number' ? Math.max(1, generate.groups) : 1;
  // Full path -> id of every project the seed names (explicit ones win over generated ones).
  const byPath = new Map<string, number>();
  const explicit = new Map<number, number>();
  for (const [i, p] of projects.entries()) {
    const f = fields(p);
    if (typeof f.id !== 'number') continue;
    explicit.set(f.id, i);
    const name = typeof f.name === 'string' ? f.name : `project-${f.id}`;
    byPath.set(`${typeof f.namespace === 'string' ? f.namespace : 'group-1'}/${name}`.toLowerCase(), f.id);
  }
  const resolve = (ref: unknown): number | null => {
    if (typeof ref === 'number') return explicit.has(ref) || ref <= generated ? ref : null;
    if (typeof ref !== 'string') return null;
    const found = byPath.get(ref.toLowerCase());
    if (found !== undefined) return found;
    const m = /^group-(\d+)\/project-(\d+)$/i.exec(ref);
    const id = m ? Number(m[2]) : 0;
    return m && id >= 1 && id <= generated && !explicit.has(id) && Number(m[1]) === ((id - 1) % groups) + 1 ? id : null;
  };
  if (inventory.items_file !== undefined) return;
  const parent = new Map<number, number>();
  for (const [i, p] of projects.entries()) {
    const f = fields(p);
    if (f.forked_from === undefined || typeof f.id !== 'number') continue;
    // Anything but an id or a path already has the schema's own message.
    if (typeof f.forked_from !== 'number' && typeof f.forked_from !== 'string') continue;
    const target = resolve(f.forked_from);
    const path = ['inventory', 'projects', i, 'forked_from'];
    if (target === null) problem(path, `unknown project ${JSON.stringify(f.forked_from)}`);
    else if (target === f.id) problem(path, 'a project cannot be a fork of itself');
    else parent.set(f.id, target);
  }
  // A chain of forked_from that comes back to where it started is no fork network.
  for (const [id] of parent) {
    const seen = new Set<number>([id]);
    for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
      if (at === id) {
        problem(
          ['inventory', 'projects', explicit.get(id) as number, 'forked_from'],
          `project ${id} would be a fork of its own fork`,
        );
        break;
      }
      if (seen.has(at)) break;
      seen.add(at);
    }
  }
}
