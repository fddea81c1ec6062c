/**
 * For the secrets and token tests: a sandbox seeded with distinctive credential values, a sandbox
 * process whose own stderr log is kept, and a scanner that looks for secret values (raw and in the
 * encodings a careless writer would produce) in files, directories and captured output.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { BIN, writeSeed } from './cli-harness.js';

/**
 * Credential values that occur nowhere else, so any hit is a leak. The OAuth values and the client
 * secret contain '+', '/' and '=' so that their URL-encoded and JSON forms differ from the raw ones.
 */
export const SECRETS = {
  /** root's admin token (api, sudo), the run's personal access token. */
  pat: 'glpat-Sx7QmPatRootK2v9LwZr4Tn8Yb',
  /** A second root token (api) that replaces the first after a revocation. */
  patNext: 'glpat-Sx7QmNextRootH5c3JpXs6Dq1Fa',
  /** ops-admin's token (api): revokes the run's token in the middle of a run. */
  revoker: 'glpat-Sx7QmRevokerOps9Gd4Ke2Wu7Mc',
  /** A token the instance has never issued. */
  unknown: 'glpat-Sx7QmUnknownNx3Rb8Vh5Pz2Je',
  oauthAccess: 'Sx7Qm+OaAcc/Lk4Hw9Rt2Ge6Uy=',
  oauthRefresh: 'Sx7Qm+OaRef/Bn5Cx8Jq3Fv7Ma=',
  clientSecret: 'gloas-Sx7Qm+CliSec/Zp6Dk1Ws9Ht4=',
  /** A client secret the application does not have: its refresh fails. */
  wrongClientSecret: 'gloas-Sx7Qm+BadSec/Xe3Vb8Nk2Qc5=',
} as const;

/** The built-in seed (small inventory) with the distinctive values above added or in place of its own. */
export function writeSecretSeed(dir: string, opts: Parameters<typeof writeSeed>[1] = {}): string {
  const file = writeSeed(dir, opts);
  const swaps: [string, string][] = [
    ['sandbox-oauth-access-root-0001', SECRETS.oauthAccess],
    ['sandbox-oauth-refresh-root-0001', SECRETS.oauthRefresh],
    ['gloas-sandbox-application-secret-0001', SECRETS.clientSecret],
  ];
  let text = readFileSync(file, 'utf8');
  for (const [from, to] of swaps) {
    if (!text.includes(from)) throw new Error(`seed has no ${from}`);
    text = text.split(from).join(to);
  }
  // The seed's own root token stays, for the tests' look-ups (cli-harness's ADMIN_TOKEN).
  const extra = [
    `  - { type: personal, user: root, name: run, value: "${SECRETS.pat}", scopes: [api, sudo], expires_at: "2099-01-01" }`,
    `  - { type: personal, user: root, name: next, value: "${SECRETS.patNext}", scopes: [api], expires_at: "2099-01-01" }`,
    `  - { type: personal, user: ops-admin, name: revoker, value: "${SECRETS.revoker}", scopes: [api], expires_at: "2099-01-01" }`,
  ];
  text = text.replace(/^credentials:\n/m, `credentials:\n${extra.join('\n')}\n`);
  writeFileSync(file, text);
  return file;
}

export interface LoggedSandbox {
  url: string;
  child: ChildProcess;
  /** Everything the sandbox process wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `shardmove sandbox --port 0 ...args` and keeps its output (its log goes to stderr). */
export async function startLoggedSandbox(args: string[], env: Record<string, string> = {}): Promise<LoggedSandbox> {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stderr!.on('data', (c) => (out += String(c)));
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error('sandbox did not start')), 20_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      out += `${line}\n`;
      lines.on('line', (l) => (out += `${l}\n`));
      done((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => fail(new Error(`sandbox exited with ${code}: ${out}`)));
  });
  return {
    url,
    child,
    output: () => out,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

/** Every OAuth access and refresh token the sandbox ever held (seeded and issued by refreshes). */
export function sandboxOauthTokens(sandboxDb: string): { values: string[]; refreshes: number; createdMs: number[] } {
  const db = new Database(sandboxDb, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare("SELECT value, refresh_token, previous_id, created_at FROM credentials WHERE type = 'oauth' ORDER BY id")
      .all() as { value: string; refresh_token: string | null; previous_id: number | null; created_at: string }[];
    const issued = rows.filter((r) => r.previous_id !== null);
    return {
      values: rows.flatMap((r) => [r.value, ...(r.refresh_token ? [r.refresh_token] : [])]),
      refreshes: issued.length,
      createdMs: issued.map((r) => Date.parse(r.created_at)),
    };
  } finally {
    db.close();
  }
}

/**
 * The byte strings whose presence would reveal `secret`: the value, its URL and JSON encodings,
 * base64 (standard and url-safe, at every alignment inside a longer blob) and every 12-character
 * window of it (a truncated token is still a leak).
 */
export function leakForms(secret: string): { form: string; bytes: Buffer }[] {
  const forms = new Map<string, string>();
  const add = (form: string, name: string) => {
    if (!forms.has(form)) forms.set(form, name);
  };
  add(secret, 'raw');
  add(encodeURIComponent(secret), 'url-encoded');
  add(new URLSearchParams({ x: secret }).toString().slice(2), 'form-encoded');
  add(JSON.stringify(secret).slice(1, -1), 'json');
  for (let shift = 0; shift < 3; shift += 1) {
    const b64 = Buffer.from(`${'x'.repeat(shift)}${secret}`).toString('base64');
    // Drop the characters that depend on what precedes or follows the value in a larger blob.
    const stable = b64.slice(shift === 0 ? 0 : 4, -4);
    add(stable, `base64@${shift}`);
    add(stable.replace(/\+/g, '-').replace(/\//g, '_'), `base64url@${shift}`);
  }
  for (let i = 0; i + 12 <= secret.length; i += 1) add(secret.slice(i, i + 12), `part@${i}`);
  return [...forms].map(([form, name]) => ({ form: name, bytes: Buffer.from(form) }));
}

/** Where in `data` (named `where`) any form of any secret occurs; one line per secret found. */
export function findLeaks(where: string, data: Buffer | string, secrets: readonly string[]): string[] {
  const buf = typeof data === 'string' ? Buffer.from(data) : data;
  const hits: string[] = [];
  for (const s of secrets) {
    const hit = leakForms(s)
      .map((f) => ({ form: f.form, at: buf.indexOf(f.bytes) }))
      .find((h) => h.at >= 0);
    if (hit) hits.push(`${where}: ${hit.form} of ${s.slice(0, 10)}... at byte ${hit.at}`);
  }
  return hits;
}

/** Every regular file under `root`, recursively. */
export function filesUnder(root: string): string[] {
  if (!existsSync(root)) return [];
  const out: string[] = [];
  for (const e of readdirSync(root, { withFileTypes: true })) {
    const p = join(root, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** Scans every file under `root` except the `allowed` ones (the token files themselves). */
export function scanTree(
  root: string,
  secrets: readonly string[],
  allowed: ReadonlySet<string> = new Set(),
): { files: string[]; leaks: string[] } {
  const files = filesUnder(root).filter((f) => !allowed.has(f));
  const leaks = files.flatMap((f) => (statSync(f).size > 0 ? findLeaks(f, readFileSync(f), secrets) : []));
  return { files, leaks };
}

/**
 * Checkpoints a SQLite file's WAL into the main file (the form a backup would copy) and returns
 * every table's rows as text, so values are also searched after SQLite has rewritten them.
 */
export function checkpointAndDump(file: string): string {
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    return tables.map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t.name}"`).all())).join('\n');
  } finally {
    db.close();
  }
}

/**
 * Command lines of `pid` and all its descendants, read from /proc (Linux); empty elsewhere. Polled
 * while a run goes on, so a child that put a token in its argv would be seen.
 */
export function commandLinesOfTree(pid: number): string[] {
  if (!existsSync('/proc/self/stat')) return [];
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(name), ppid);
    } catch {
      // The process ended while we looked.
    }
  }
  const inTree = (p: number): boolean => {
    for (let cur: number | undefined = p, n = 0; cur !== undefined && cur > 1 && n < 64; cur = parents.get(cur), n += 1)
      if (cur === pid) return true;
    return false;
  };
  const out: string[] = [];
  for (const p of parents.keys()) {
    if (!inTree(p)) continue;
    try {
      out.push(readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' '));
    } catch {
      // Gone.
    }
  }
  return out;
}

/** How a plan written by `writeSecretPlan` authenticates. */
export type AuthStyle = 'env' | 'file' | 'oauth';

/**
 * A plan for the sandbox with the distinctive credentials: `env` reads ${SHARDMOVE_TOKEN}, `file`
 * reads pat.txt, `oauth` reads the pair and client secret from files next to the plan. Returns the
 * plan's path and the token files written (which legitimately hold secrets).
 */
export function writeSecretPlan(
  dir: string,
  opts: {
    auth: AuthStyle;
    name?: string;
    mode?: 'throttled' | 'bulk';
    concurrency?: number;
    to?: string;
    clientSecret?: string;
  },
): { plan: string; tokenFiles: string[] } {
  const tokenFiles: string[] = [];
  const secretFile = (name: string, value: string) => {
    const p = join(dir, name);
    writeFileSync(p, `${value}\n`, { mode: 0o600 });
    tokenFiles.push(p);
  };
  let auth: string[];
  if (opts.auth === 'env') auth = ['  token: ${SHARDMOVE_TOKEN}'];
  else if (opts.auth === 'file') {
    secretFile('pat.txt', SECRETS.pat);
    auth = ['  token_file: pat.txt'];
  } else {
    secretFile('access.txt', SECRETS.oauthAccess);
    secretFile('refresh.txt', SECRETS.oauthRefresh);
    secretFile('client-secret.txt', opts.clientSecret ?? SECRETS.clientSecret);
    auth = [
      '  oauth:',
      '    access_token_file: access.txt',
      '    refresh_token_file: refresh.txt',
      '    client_id: sandbox-app-uid',
      '    client_secret_file: client-secret.txt',
      '    redirect_uri: http://localhost/cb',
    ];
  }
  const plan = join(dir, `${opts.name ?? 'it'}.yaml`);
  writeFileSync(
    plan,
    [
      'version: 1',
      `name: ${opts.name ?? 'it'}`,
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      ...auth,
      '  timeout: 10s',
      'move:',
      '  from: [nfs-1, nfs-2, default]',
      `  to: ${opts.to ?? 'cluster'}`,
      '  kinds: [projects, snippets, groups]',
      `  mode: ${opts.mode ?? 'throttled'}`,
      `  concurrency: ${opts.concurrency ?? 10}`,
      'weights: { cluster: 100, nfs-1: 0, nfs-2: 0, default: 0 }',
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      'verify: true',
      '',
    ].join('\n'),
  );
  return { plan, tokenFiles };
}
