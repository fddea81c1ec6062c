/**
 * The twin's sandbox seed, as text (pure): a YAML seed whose header comment says what was carried
 * from the dry run and what was not, and the lines of its items file (docs/sandbox.md, "The seed
 * file": `inventory.items_file`). The orchestrator never imports the sandbox, so the format is
 * written here from its documentation; test/twin.test.ts loads what this writes in the sandbox.
 */
import type { KindAccessMode } from '../api/types.js';
import type { Kind } from '../plan/types.js';
import type { Estimate } from '../report/estimate.js';
import { formatApproxDuration, formatBytes } from '../report/summary.js';

/** The sandbox-only admin token of every twin: useless anywhere but a twin sandbox. */
export const TWIN_ADMIN_TOKEN = 'glpat-twin-rehearsal-admin-0001';
/** The namespace of the twin's projects: `twin/project-<id>`. */
export const TWIN_NAMESPACE = 'twin';

/** The items file's first line (version 1 of the format). */
export const ITEMS_HEADER = JSON.stringify({
  shardmove_sandbox_items: 1,
  columns: ['kind', 'id', 'storage', 'size_bytes', 'hidden', 'pending_delete'],
  namespace: TWIN_NAMESPACE,
});

const SANDBOX_KIND: Record<Kind, string> = { projects: 'project', snippets: 'snippet', groups: 'group' };
const KIND_WORDS: Record<Kind, string> = { projects: 'projects', snippets: 'snippets', groups: 'group wikis' };

/** One item's line in the items file. `storage` is the storage name already as JSON. */
export function itemLine(
  kind: Kind,
  id: number,
  storageJson: string,
  sizeBytes: number | null,
  hidden: boolean,
  pendingDelete: boolean,
): string {
  return `["${SANDBOX_KIND[kind]}",${id},${storageJson},${sizeBytes === null ? 'null' : Math.round(sizeBytes)},${hidden ? 1 : 0},${pendingDelete ? 1 : 0}]`;
}

/** Items of one kind on one source storage, as carried. */
export interface TwinCount {
  kind: Kind;
  source: string;
  items: number;
  /** Items listed with a size, and their sum. */
  sized: number;
  bytes: number;
  maxBytes: number;
  hidden: number;
  pendingDelete: number;
  /** Items whose flag no finished census knows (carried as not flagged). */
  hiddenUnknown: number;
  pendingUnknown: number;
}

/** A fork network's member as carried: where it is and its flags (a project written explicitly). */
export interface TwinNetworkMember {
  id: number;
  storage: string;
  sizeBytes: number | null;
  hidden: boolean;
  pendingDelete: boolean;
}

/** A fork network the dry run recorded: its root (a member, or a project off the sources) and its members. */
export interface TwinNetwork {
  root: number;
  /** The root's storage, where its pool is; null: not known (the members are then carried standalone). */
  rootStorage: string | null;
  /** The pool's estimate, the root's repository: the size a root off the sources is seeded with. */
  poolBytes: number | null;
  members: TwinNetworkMember[];
}

/** Everything the seed says, gathered from the checkpoint. */
export interface TwinSeedInput {
  planName: string;
  /** The checkpoint's file name only: a full path can name a host or a person. */
  checkpointName: string;
  finishedAt: number | null;
  version: string | null;
  /** true EE, false CE, null: the instance did not say (or the dry run's release did not record it). */
  enterprise: boolean | null;
  access: Partial<Record<Kind, KindAccessMode>>;
  /** Drains the dry run counted by move records (no number known), as `kind on source`. */
  byRecords: { kind: Kind; source: string }[];
  sources: string[];
  destination: string;
  /** Every destination; the first is `destination`. */
  destinations?: string[];
  weights: Record<string, number> | null;
  counts: TwinCount[];
  unlistable: number[];
  estimate: Estimate & { concurrency: number };
  /** The items file's name, relative to the seed. */
  itemsFile: string;
  /** The fork networks the dry run recorded (absent: none). */
  networks?: TwinNetwork[];
  /**
   * How to rehearse on the twin, for the header: the commands (from the seed's folder), or why
   * there are none. Absent: the header names no command.
   */
  rehearsal?: string[];
}

/** Edition and tier as far as pre-flight showed them, with the reason in words. */
export function editionOf(
  enterprise: boolean | null,
  access: Partial<Record<Kind, KindAccessMode>>,
  version?: string | null,
): { edition: 'ee' | 'ce'; tier: 'free' | 'premium' | 'ultimate' | null; note: string } {
  if (enterprise === false) return { edition: 'ce', tier: null, note: 'edition ce (GET /metadata), which has no tier' };
  const ee =
    enterprise === true
      ? 'edition ee (GET /metadata)'
      : 'edition unknown (the checkpoint does not record it: a dry run by an older release, or an instance whose /metadata does not say), written as ee';
  const groups = access.groups;
  // Before 16.3 GET /groups ignores the storage filter on every tier, so move records say nothing of the licence.
  const [major = 0, minor = 0] = (version ?? '').split('.').map(Number);
  if (groups === 'records' && version && (major < 16 || (major === 16 && minor < 3)))
    return {
      edition: 'ee',
      tier: 'ultimate',
      note: `${ee}; tier unknown (before 16.3 GET /groups ignores the storage filter on every tier, so group wikis go by move records whatever the licence), written as ultimate, the sandbox's default`,
    };
  // EE shows a group's storage only with the group_wikis licence: without it (Free) pre-flight moves
  // groups by their move records (checkpoints from before that said `unsupported`).
  if (groups === 'unsupported' || groups === 'records')
    return {
      edition: 'ee',
      tier: 'free',
      note: `${ee}; tier free (GET /groups shows no repository_storage: no group_wikis licence)`,
    };
  if (groups === 'listing') {
    return {
      edition: 'ee',
      tier: 'premium',
      note: `${ee}; tier premium (GET /groups shows repository_storage, the group_wikis licence: premium or ultimate, which look alike to every request shardmove sends)`,
    };
  }
  return {
    edition: 'ee',
    tier: 'ultimate',
    note: `${ee}; tier unknown (the plan moves no group wikis, so pre-flight did not probe for group moves), written as ultimate, the sandbox's default`,
  };
}

/** A storage name in a comment or a flow sequence: bare when plain, else as JSON (also YAML). */
const name = (s: string) => (/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(s) ? s : JSON.stringify(s));

/** Every storage the seed must configure: the instance's weighted ones, the plan's, and the items'. */
export function storagesOf(
  input: Pick<TwinSeedInput, 'weights' | 'sources' | 'destination' | 'destinations' | 'counts' | 'networks'>,
): string[] {
  const out = new Set<string>(Object.keys(input.weights ?? {}));
  for (const s of [
    ...input.sources,
    input.destination,
    ...(input.destinations ?? []),
    ...input.counts.map((c) => c.source),
    ...(input.networks ?? []).flatMap((n) => (n.rootStorage === null ? [] : [n.rootStorage])),
  ])
    out.add(s);
  return [...out];
}

/** What of the networks is carried, in the header's words. */
function networksCarried(networks: readonly TwinNetwork[]): string[] {
  if (networks.length === 0)
    return ['  fork networks: none (the dry run recorded no project with a fork among the sources)'];
  const members = networks.reduce((a, n) => a + n.members.length, 0);
  const off = networks.filter((n) => n.rootStorage !== null && !n.members.some((m) => m.id === n.root)).length;
  const unknown = networks.filter((n) => n.rootStorage === null).length;
  return [
    `  fork networks: ${networks.length} (${members} members on the sources), each member written under inventory.projects`,
    '    with forked_from its root and visibility internal (GitLab pools a network only when its root is above private);',
    ...(off > 0
      ? [`    ${off} root(s) off the sources seeded on their storage, sized as the pool's estimate (their repository)`]
      : []),
    ...(unknown > 0
      ? [`    ${unknown} network(s) whose root's storage is unknown: their members are carried as standalone projects`]
      : []),
  ];
}

/** The network members and roots as explicit projects (they replace the items file's lines of the same id). */
function networkProjects(networks: readonly TwinNetwork[]): string[] {
  const rows = new Map<number, string>();
  const mb = (bytes: number | null) =>
    bytes === null ? '' : `, size_mb: ${Math.round((bytes / 2 ** 20) * 1000) / 1000}`;
  const flags = (m: TwinNetworkMember) =>
    `${m.hidden ? ', hidden: true' : ''}${m.pendingDelete ? ', pending_delete: true' : ''}`;
  const entry = (id: number, storage: string, rest: string) =>
    `    - { id: ${id}, name: project-${id}, namespace: ${TWIN_NAMESPACE}, storage: ${JSON.stringify(storage)}, visibility: internal${rest} }`;
  for (const n of networks) {
    if (n.rootStorage === null) continue;
    if (!n.members.some((m) => m.id === n.root)) rows.set(n.root, entry(n.root, n.rootStorage, mb(n.poolBytes)));
    for (const m of n.members)
      rows.set(
        m.id,
        entry(m.id, m.storage, `${mb(m.sizeBytes)}${flags(m)}${m.id === n.root ? '' : `, forked_from: ${n.root}`}`),
      );
  }
  if (rows.size === 0) return [];
  return ['  projects:', ...[...rows].sort((a, b) => a[0] - b[0]).map(([, line]) => line)];
}

/** The seed YAML, header comment first. */
export function renderTwinSeed(input: TwinSeedInput): string {
  const e = editionOf(input.enterprise, input.access, input.version);
  const storages = storagesOf(input);
  const c: string[] = [];
  c.push(
    `shardmove twin of the instance behind plan "${input.planName}": its shape, not its data.`,
    `From the dry run checkpoint ${input.checkpointName}${input.finishedAt === null ? '' : `, finished ${new Date(input.finishedAt).toISOString()}`}.`,
    '',
    'Names are replaced: no project name, path, user, token, URL or host of the instance is in this',
    `seed or in its items file (${input.itemsFile}). Each item keeps its kind, id, size and storage, and is`,
    `named from its id: projects ${TWIN_NAMESPACE}/project-<id>, snippets snippet-<id>, group wikis group-<id>.`,
    'Storage names are kept: the plan names them.',
    '',
    ...(input.rehearsal
      ? [
          'Rehearse the same plan on it (docs/sandbox.md, "Rehearsing on a twin of your instance"):',
          ...input.rehearsal.map((l) => `  ${l.replace(/[\r\n]/g, '?')}`),
          '',
        ]
      : []),
    'Carried from the dry run:',
    `  release ${input.version ?? 'unknown (written as the sandbox default)'}; ${e.note}`,
    `  storages ${storages.map(name).join(', ')}; ${input.weights ? 'weights as the instance had them before the dry run' : 'weights unknown (the sandbox default)'}`,
  );
  for (const k of input.counts) c.push(`  ${countLine(k)}`);
  for (const r of input.byRecords) {
    c.push(
      `  ${KIND_WORDS[r.kind]} on ${name(r.source)}: none carried (the instance does not expose their storage; the dry run could not count them)`,
    );
  }
  for (const [kind, mode] of Object.entries(input.access) as [Kind, KindAccessMode][]) {
    if (mode === 'unsupported')
      c.push(`  ${KIND_WORDS[kind]}: none (the instance cannot move them; the plan's run skips them too)`);
  }
  if (input.unlistable.length > 0)
    c.push(`  ${input.unlistable.length} projects whose listing page answers 500 (instance.unlistable)`);
  c.push(...networksCarried(input.networks ?? []));
  c.push(
    'Not carried (the checkpoint does not know it):',
    '  - forks of forks (GitLab links them to no pool: the dry run records them as standalone projects), and',
    "    members of a network that are not on the plan's sources",
    `  - items on storages the plan does not drain (a dry run lists only the sources), and items the dry run found gone`,
    '  - visibility, commit counts and contents, owners, users and group membership',
    '  - snippet and group wiki sizes (GitLab lists none: seeded as 10 MB each), groups pending deletion',
    "  - Geo sites (a dry run reads none: the sandbox's default primary and secondary on premium and ultimate)",
    '  - storage health (every storage is reachable here), Admin Mode, feature flags, token settings',
    '',
    `estimate (dry run): ${formatApproxDuration(input.estimate.ms)} at ${input.estimate.concurrency} moves in flight (${input.estimate.assumptions})`,
  );
  const lines = c.map((l) => (l === '' ? '#' : `# ${l}`));
  lines.push(
    'instance:',
    ...(input.version ? [`  version: ${JSON.stringify(input.version)}`] : []),
    `  edition: ${e.edition}`,
    ...(e.tier ? [`  tier: ${e.tier}`] : []),
    `  storages: [${storages.map((s) => JSON.stringify(s)).join(', ')}]`,
    ...(input.weights
      ? [
          `  weights: {${Object.entries(input.weights)
            .map(([k, v]) => ` ${JSON.stringify(k)}: ${v}`)
            .join(',')} }`,
        ]
      : []),
    ...(input.unlistable.length > 0 ? [`  unlistable: [${input.unlistable.join(', ')}]`] : []),
    'users:',
    '  - { id: 1, username: twin-admin, name: twin rehearsal, admin: true }',
    'credentials:',
    `  - { type: personal, user: twin-admin, name: twin-rehearsal, value: "${TWIN_ADMIN_TOKEN}", scopes: [api, sudo] }`,
    'inventory:',
    `  items_file: ${JSON.stringify(input.itemsFile)}`,
    ...networkProjects(input.networks ?? []),
    '',
  );
  return lines.join('\n');
}

function countLine(k: TwinCount): string {
  const parts = [`${KIND_WORDS[k.kind]} on ${name(k.source)}: ${k.items}`];
  if (k.kind === 'projects' || k.sized > 0)
    parts.push(
      `${formatBytes(k.bytes)} in ${k.sized} with a size${k.sized < k.items ? ` (${k.items - k.sized} unknown: seeded as 10 MB)` : ''}`,
    );
  else parts.push('sizes unknown');
  if (k.kind === 'projects') {
    parts.push(
      k.hiddenUnknown > 0
        ? `hidden unknown for ${k.hiddenUnknown} (no finished census: carried as not hidden)`
        : `${k.hidden} hidden`,
    );
    parts.push(
      k.pendingUnknown > 0
        ? `pending deletion unknown for ${k.pendingUnknown} (carried as not pending)`
        : `${k.pendingDelete} pending deletion`,
    );
  }
  return parts.join('; ');
}
