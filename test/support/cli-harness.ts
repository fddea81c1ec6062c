/**
 * For the CLI integration tests: the sandbox and the CLI as separate processes, talking
 * over real HTTP, plus small readers of the sandbox's own view (items by storage, move lists).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { onTestFinished } from 'vitest';
import type { Document } from 'yaml';
import { parseDocument } from 'yaml';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'shardmove');
export const ADMIN_TOKEN = 'glpat-sandbox-root-api-sudo-0001';
/** The built-in seed's OAuth pair for root and its application's secret (sandbox-only values). */
export const OAUTH = {
  accessToken: 'sandbox-oauth-access-root-0001',
  refreshToken: 'sandbox-oauth-refresh-root-0001',
  clientSecret: 'gloas-sandbox-application-secret-0001',
};

/**
 * A copy of the built-in seed (plans/sandbox.yaml) with a smaller inventory, so a whole run takes a
 * few seconds, and optionally a short OAuth token lifetime. Returns the seed file's path.
 */
export function writeSeed(
  dir: string,
  opts: { projects?: number; snippets?: number; groups?: number; oauthTtlSeconds?: number } = {},
): string {
  let text = readFileSync(join(ROOT, 'plans', 'sandbox.yaml'), 'utf8');
  const set = (key: string, value: number | undefined) => {
    if (value === undefined) return;
    const re = new RegExp(`^(\\s*${key}:\\s*)\\d+`, 'm');
    if (!re.test(text)) throw new Error(`seed has no ${key}`);
    text = text.replace(re, `$1${value}`);
  };
  set('projects', opts.projects ?? 80);
  set('snippets', opts.snippets ?? 15);
  set('groups', opts.groups ?? 8);
  set('oauth_ttl_seconds', opts.oauthTtlSeconds);
  const file = join(dir, 'seed.yaml');
  writeFileSync(file, text);
  return file;
}

export interface SandboxProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `shardmove sandbox --port 0 ...args` and waits for its ready line. */
export async function startSandboxProcess(args: string[]): Promise<SandboxProcess> {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr?.resume();
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error('sandbox did not start')), 20_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      done((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => fail(new Error(`sandbox exited with ${code}`)));
  });
  return {
    url,
    child,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * A report's text with its wrapped lines joined again (the final summary wraps at 80 columns in a
 * pipe, continuations indented): an assertion reads a sentence or a command, not where the line
 * broke. Every newline followed by indentation becomes one space, so indented lines join too.
 */
export function flat(text: string): string {
  return text.replace(/\n +(?=\S)/g, ' ');
}

/** Runs the CLI to completion; `onStart` gets the child (e.g. to signal it). */
export function runCli(
  args: string[],
  opts: { env?: Record<string, string>; cwd: string; onStart?: (c: ChildProcess) => void },
): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c) => (stdout += String(c)));
  child.stderr?.on('data', (c) => (stderr += String(c)));
  opts.onStart?.(child);
  return new Promise((done) => child.on('exit', (code) => done({ code, stdout, stderr })));
}

/**
 * Runs a command line shardmove printed for the operator (`shardmove run 'my plan.yaml' --state ...`)
 * as printed, through bash, with `shardmove` standing for this checkout's bin: what the operator
 * would get by pasting it.
 */
export function runPrinted(
  line: string,
  opts: { env?: Record<string, string>; cwd: string; onStart?: (c: ChildProcess) => void },
): Promise<CliResult> {
  if (!line.startsWith('shardmove ')) throw new Error(`not a shardmove command: ${line}`);
  const child = spawn('bash', ['-c', `shardmove() { "$SHARDMOVE_NODE" "$SHARDMOVE_BIN" "$@"; }\n${line}`], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env, SHARDMOVE_NODE: process.execPath, SHARDMOVE_BIN: BIN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c) => (stdout += String(c)));
  child.stderr?.on('data', (c) => (stderr += String(c)));
  opts.onStart?.(child);
  return new Promise((done) => child.on('exit', (code) => done({ code, stdout, stderr })));
}

/**
 * A fresh temporary directory, `shardmove-PREFIX.XXXXXX`. The dot keeps mkdtemp's random letters
 * apart from the name: `shardmove-control-other-oz6SvV` has the shape of a custom-prefixed token
 * (a word, a dash, 20 mixed-case characters and digits), and every message naming a path under it
 * came out masked, as the run masks anything token-like.
 */
export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `shardmove-${prefix}.`));
}

/**
 * A sandbox process seeded with `counts` in a fresh temporary directory (`args` before the seed),
 * both gone when the test ends, and the environment a run against it takes.
 */
export async function seededSandboxProcess(
  name: string,
  counts: Parameters<typeof writeSeed>[1],
  args: string[] = [],
): Promise<{ dir: string; sandbox: SandboxProcess; env: Record<string, string> }> {
  const dir = tempDir(name);
  const sandbox = await startSandboxProcess([...args, '--seed', writeSeed(dir, counts)]);
  onTestFinished(async () => {
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, sandbox, env: sandboxEnv(sandbox.url) };
}

/** Writes a plan for the sandbox (credentials from ${SHARDMOVE_URL} / ${SHARDMOVE_TOKEN}). */
export function writePlan(
  dir: string,
  overrides: {
    name?: string;
    mode?: 'throttled' | 'bulk';
    concurrency?: number;
    from?: string[];
    oauth?: boolean;
  } = {},
): string {
  const file = join(dir, 'plan.yaml');
  // OAuth: the seed's pair and application, from files next to the plan (written back on refresh).
  const auth = overrides.oauth
    ? [
        '  oauth:',
        '    access_token_file: access.txt',
        '    refresh_token_file: refresh.txt',
        '    client_id: sandbox-app-uid',
        '    client_secret_file: client-secret.txt',
        '    redirect_uri: http://localhost/cb',
      ]
    : ['  token: ${SHARDMOVE_TOKEN}'];
  if (overrides.oauth) {
    writeFileSync(join(dir, 'access.txt'), `${OAUTH.accessToken}\n`, { mode: 0o600 });
    writeFileSync(join(dir, 'refresh.txt'), `${OAUTH.refreshToken}\n`, { mode: 0o600 });
    writeFileSync(join(dir, 'client-secret.txt'), `${OAUTH.clientSecret}\n`, { mode: 0o600 });
  }
  writeFileSync(
    file,
    [
      'version: 1',
      `name: ${overrides.name ?? 'it'}`,
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      ...auth,
      '  timeout: 10s',
      'move:',
      `  from: [${(overrides.from ?? ['nfs-1', 'nfs-2', 'default']).join(', ')}]`,
      '  to: cluster',
      '  kinds: [projects, snippets, groups]',
      `  mode: ${overrides.mode ?? 'throttled'}`,
      `  concurrency: ${overrides.concurrency ?? 20}`,
      'weights: { cluster: 100, nfs-1: 0, nfs-2: 0, default: 0 }',
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      'verify: true',
      '',
    ].join('\n'),
  );
  return file;
}

const PATHS = { projects: '/projects', snippets: '/snippets/all', groups: '/groups' } as const;

/** Every item of a kind as the sandbox reports it: id -> repository_storage. */
export async function storagesOf(url: string, kind: keyof typeof PATHS): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (let page = 1; ; page += 1) {
    const res = await fetch(`${url}/api/v4${PATHS[kind]}?per_page=100&page=${page}`, {
      headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN },
    });
    const body = (await res.json()) as { id: number; repository_storage: string }[];
    if (!res.ok) throw new Error(`${kind}: ${res.status}`);
    for (const it of body) out.set(it.id, it.repository_storage);
    if (body.length < 100) return out;
  }
}

export interface SandboxMove {
  id: number;
  state: string;
  itemId: number;
  source: string;
  destination: string;
}

/** Every move of a kind the sandbox recorded, oldest first. */
export async function movesOf(url: string, kind: 'project' | 'snippet' | 'group'): Promise<SandboxMove[]> {
  const out: SandboxMove[] = [];
  for (let page = 1; ; page += 1) {
    const res = await fetch(`${url}/api/v4/${kind}_repository_storage_moves?per_page=100&page=${page}`, {
      headers: { 'PRIVATE-TOKEN': ADMIN_TOKEN },
    });
    const body = (await res.json()) as ({
      id: number;
      state: string;
      source_storage_name: string;
      destination_storage_name: string;
    } & Record<string, { id: number }>)[];
    for (const m of body) {
      out.push({
        id: m.id,
        state: m.state,
        itemId: (m.project ?? m.snippet ?? m.group)?.id ?? -1,
        source: m.source_storage_name,
        destination: m.destination_storage_name,
      });
    }
    if (body.length < 100) return out.sort((a, b) => a.id - b.id);
  }
}

/** Every move the sandbox recorded, of every kind. */
export async function allMovesOf(url: string): Promise<SandboxMove[]> {
  return [...(await movesOf(url, 'project')), ...(await movesOf(url, 'snippet')), ...(await movesOf(url, 'group'))];
}

/** How many moves the sandbox recorded, of every kind. */
export async function moveTotal(url: string): Promise<number> {
  return (await allMovesOf(url)).length;
}

/**
 * The scheduling invariants, from the sandbox's own records: no move for an item already on the
 * destination, and per item every move but the last one failed (never two moves alive at once).
 */
export function invariantViolations(moves: readonly SandboxMove[], destination: string): string[] {
  const problems: string[] = [];
  const byItem = new Map<number, SandboxMove[]>();
  for (const m of moves) {
    if (m.source === destination) problems.push(`move ${m.id} of item ${m.itemId} starts on the destination`);
    byItem.set(m.itemId, [...(byItem.get(m.itemId) ?? []), m]);
  }
  for (const [item, list] of byItem) {
    const earlier = list.slice(0, -1).filter((m) => m.state !== 'failed');
    if (earlier.length > 0) problems.push(`item ${item} has moves ${list.map((m) => `${m.id}:${m.state}`).join(', ')}`);
  }
  return problems;
}

export function sandboxEnv(url: string): Record<string, string> {
  return { SHARDMOVE_URL: url, SHARDMOVE_TOKEN: ADMIN_TOKEN };
}

/** The harness's seed (writeSeed) with `change` applied to it as a YAML document; returns its path. */
export function writeChangedSeed(
  dir: string,
  counts: Parameters<typeof writeSeed>[1],
  change: (seed: Document) => void,
): string {
  const file = writeSeed(dir, counts);
  const doc = parseDocument(readFileSync(file, 'utf8'));
  change(doc);
  writeFileSync(file, doc.toString());
  return file;
}

/**
 * A sandbox process on a database file, with the harness's small seed (`counts`) changed by
 * `change` (a YAML document), and a working directory; both removed when the test ends.
 */
export async function startSeededSandbox(
  name: string,
  counts: { projects: number; snippets: number; groups: number },
  change: (seed: Document) => void,
): Promise<{ sandbox: SandboxProcess; dir: string; db: string }> {
  const dir = tempDir(name);
  const seedFile = writeChangedSeed(dir, counts, change);
  const db = join(dir, 'sandbox.db');
  const sandbox = await startSandboxProcess([
    '--seed',
    seedFile,
    '--db',
    db,
    '--move-duration',
    '20',
    '--workers',
    '20',
  ]);
  onTestFinished(async () => {
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { sandbox, dir, db };
}

/** Runs `query` on a sandbox's database, read-only (the sandbox keeps running; WAL allows it). */
export function fromDb<T>(file: string, query: string, ...params: unknown[]): T[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(query).all(...params) as T[];
  } finally {
    db.close();
  }
}
