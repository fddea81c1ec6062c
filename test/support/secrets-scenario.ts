/**
 * Scenarios of the secrets tests: a sandbox process with distinctive credentials (its DB and log
 * outside the scanned tree), a working directory for the CLI, every CLI run's output and the command
 * lines of its process tree, and the scan of all of it for secret values.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect, onTestFinished } from 'vitest';
import type { CliResult } from './cli-harness.js';
import { invariantViolations, movesOf, runCli, storagesOf, tempDir } from './cli-harness.js';
import type { AuthStyle, LoggedSandbox } from './secrets-harness.js';
import {
  SECRETS,
  checkpointAndDump,
  commandLinesOfTree,
  findLeaks,
  scanTree,
  startLoggedSandbox,
  writeSecretPlan,
  writeSecretSeed,
} from './secrets-harness.js';

export const ALL_KNOWN: string[] = Object.values(SECRETS);

export interface Scenario {
  sandbox: LoggedSandbox;
  sandboxDb: string;
  /** The CLI's working directory: plans, token files, state/, tmp/. */
  work: string;
  /** Token files: the only files under `work` allowed to hold a secret. */
  tokenFiles: Set<string>;
  /** Everything printed by CLI processes, labelled. */
  outputs: { label: string; text: string }[];
  /** Command lines seen in the CLI's process tree while it ran. */
  argv: string[];
  run(label: string, args: string[], env?: Record<string, string>, onStart?: (pid: number) => void): Promise<CliResult>;
}

/** A sandbox process (own DB and log, outside the scanned tree) and a working directory for the CLI. */
export async function scenario(
  name: string,
  sandboxArgs: string[],
  seed: Parameters<typeof writeSecretSeed>[1],
): Promise<Scenario> {
  const root = tempDir(name);
  const sandboxDir = join(root, 'sandbox');
  const work = join(root, 'work');
  mkdirSync(sandboxDir);
  mkdirSync(join(work, 'tmp'), { recursive: true });
  const sandboxDb = join(sandboxDir, 'sandbox.db');
  const sandbox = await startLoggedSandbox(
    ['--seed', writeSecretSeed(sandboxDir, seed), '--db', sandboxDb, ...sandboxArgs],
    { LOG_LEVEL: 'debug' },
  );
  onTestFinished(async () => {
    await sandbox.stop();
    rmSync(root, { recursive: true, force: true });
  });
  const s: Scenario = {
    sandbox,
    sandboxDb,
    work,
    tokenFiles: new Set(),
    outputs: [],
    argv: [],
    async run(label, args, env = {}, onStart) {
      let timer: NodeJS.Timeout | undefined;
      const r = await runCli(args, {
        cwd: work,
        // Debug logging writes every request to the log: the most there is to leak.
        env: { SHARDMOVE_URL: sandbox.url, LOG_LEVEL: 'debug', TMPDIR: join(work, 'tmp'), ...env },
        onStart: (child) => {
          const pid = child.pid!;
          const look = () => s.argv.push(...commandLinesOfTree(pid));
          look();
          timer = setInterval(look, 200);
          onStart?.(pid);
        },
      });
      clearInterval(timer);
      s.outputs.push({ label: `${label} stdout`, text: r.stdout }, { label: `${label} stderr`, text: r.stderr });
      return r;
    },
  };
  return s;
}

/** Searches everything the scenario's processes wrote or printed; returns the hits (must be none). */
export function leaksOf(s: Scenario, secrets: readonly string[]): { leaks: string[]; scanned: string[] } {
  const leaks: string[] = [];
  const before = scanTree(s.work, secrets, s.tokenFiles);
  leaks.push(...before.leaks);
  // SQLite may keep old page images in the WAL; after a checkpoint, the main file holds everything.
  const dbs = before.files.filter((f) => /\.db$/.test(f));
  for (const db of dbs) leaks.push(...findLeaks(`${db} (rows)`, checkpointAndDump(db), secrets));
  leaks.push(...scanTree(s.work, secrets, s.tokenFiles).leaks.map((l) => `after checkpoint: ${l}`));
  for (const o of s.outputs) leaks.push(...findLeaks(o.label, o.text, secrets));
  leaks.push(...findLeaks('sandbox log', s.sandbox.output(), secrets));
  leaks.push(...findLeaks('command lines', s.argv.join('\n'), secrets));
  return { leaks, scanned: before.files };
}

export async function movesFinished(url: string): Promise<number> {
  const res = await fetch(`${url}/api/v4/project_repository_storage_moves?per_page=100`, {
    headers: { 'PRIVATE-TOKEN': SECRETS.revoker },
  });
  return ((await res.json()) as { state: string }[]).filter((m) => m.state === 'finished').length;
}

/** Sends SIGINT to `pid` once the sandbox has finished `n` project moves (or after 15 s). */
export function interruptAfterMoves(url: string, n: number): (pid: number) => void {
  return (pid) => {
    void (async () => {
      const until = Date.now() + 15_000;
      while (Date.now() < until && (await movesFinished(url)) < n) await new Promise((r) => setTimeout(r, 50));
      process.kill(pid, 'SIGINT');
    })();
  };
}

export async function expectCompleted(url: string) {
  for (const kind of ['projects', 'snippets', 'groups'] as const) {
    expect(
      [...(await storagesOf(url, kind)).values()].filter((st) => st !== 'cluster'),
      kind,
    ).toEqual([]);
  }
  for (const kind of ['project', 'snippet', 'group'] as const)
    expect(invariantViolations(await movesOf(url, kind), 'cluster'), kind).toEqual([]);
}

export function planFor(
  s: Scenario,
  auth: AuthStyle,
  opts: Omit<Parameters<typeof writeSecretPlan>[1], 'auth'> = {},
  dir = s.work,
): string {
  mkdirSync(dir, { recursive: true });
  const { plan, tokenFiles } = writeSecretPlan(dir, { auth, ...opts });
  for (const f of tokenFiles) s.tokenFiles.add(f);
  return plan;
}
