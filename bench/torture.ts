/**
 * `npm run torture`: the fault and crash torture, full configuration by default.
 *
 *   npm run torture -- [--seed N] [--kills N] [--sandbox-restarts N] [--size PROJECTS] [--small] [--keep]
 *
 * The same knobs come from the environment (TORTURE_SEED, TORTURE_KILLS, TORTURE_SANDBOX_RESTARTS,
 * TORTURE_SIZE); arguments win. --size sets the projects and scales snippets (1/10) and groups
 * (1/20) with them. --small runs the test suite's configuration. Prints the figures and exits 1 when
 * any invariant failed (the failures are listed), 0 otherwise. The working directory (sandbox
 * database, checkpoint, run log) is removed unless --keep or a failure.
 */
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { TortureConfig, TortureResult } from '../test/support/torture-run.js';
import { FULL, SMALL, runTorture } from '../test/support/torture-run.js';

function int(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

function configFrom(argv: string[]): { config: TortureConfig; keep: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string' },
      kills: { type: 'string' },
      'sandbox-restarts': { type: 'string' },
      size: { type: 'string' },
      small: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
    },
  });
  const base = values.small ? SMALL : FULL;
  const seed = int('--seed', values.seed ?? process.env.TORTURE_SEED) ?? base.seed;
  const kills = int('--kills', values.kills ?? process.env.TORTURE_KILLS) ?? base.kills;
  const restarts =
    int('--sandbox-restarts', values['sandbox-restarts'] ?? process.env.TORTURE_SANDBOX_RESTARTS) ??
    base.sandboxRestarts;
  const size = int('--size', values.size ?? process.env.TORTURE_SIZE);
  const scaled =
    size === undefined ? {} : { projects: size, snippets: Math.ceil(size / 10), groups: Math.ceil(size / 20) };
  return { config: { ...base, seed, kills, sandboxRestarts: restarts, ...scaled }, keep: values.keep };
}

function kv(rec: Record<string, number>): string {
  const entries = Object.entries(rec).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? 'none' : entries.map(([k, v]) => `${k} ${v}`).join(', ');
}

/** The figures, one per line. */
export function formatResult(r: TortureResult): string {
  const v = r.verdict;
  const c = r.config;
  const fates = { ...v.fates };
  return [
    `shardmove torture: seed ${c.seed}, ${v.items} items (${c.projects} projects, ${c.snippets} snippets, ${c.groups} group wikis)`,
    `  sandbox: --error-rate ${c.errorRate} --reset-rate ${c.resetRate} --rate-limit ${c.rateLimit} --latency ${c.latencyMs} --move-fail-rate ${c.moveFailRate} --stuck-rate ${c.stuckRate} --workers ${c.workers} --move-duration ${c.moveDurationMs}, ${c.brokenItems} broken items`,
    `Kills survived: orchestrator ${r.orchestratorKills} (SIGKILL; ${r.orchestratorKills - r.earlyKills} after the run had started, ${r.earlyKills} aimed at start-up/pre-flight), sandbox ${r.sandboxKills.SIGKILL + r.sandboxKills.SIGTERM} (SIGKILL ${r.sandboxKills.SIGKILL}, SIGTERM ${r.sandboxKills.SIGTERM})`,
    `Runs that ended by themselves before their kill: ${kv(Object.fromEntries(Object.entries(r.earlyExits).map(([code, n]) => [`exit ${code}:`, n])))}`,
    `Request faults injected (sandbox counters): ${kv(Object.fromEntries(Object.entries(r.requestFaults).filter(([k]) => !k.startsWith('move_'))))}`,
    `Move fates (sandbox records): ${kv(fates)} of ${v.moves} moves`,
    `Commits: ${r.commits.accepted} accepted, ${r.commits.refusedReadOnly} refused read-only (retried), ${r.commits.ambiguous} cut off (${v.commitsAmbiguousLanded} of them landed), ${r.commits.notApplied} not applied (faults)`,
    `Items: ${v.onDestination} on the destination, ${v.quarantined.length} quarantined`,
    ...v.quarantined.map((q) => `  ${q.kind} ${q.id}: ${q.reason}`),
    `Final run: exit ${r.finalRun.code} (attempt ${r.finalRun.attempts}), verification ${r.finalRun.verified ? 'passed' : 'NOT passed'}`,
    `Duplicate moves: ${v.duplicates.length}`,
    `Moves for items already on the destination: ${v.movesOnDestination.length}`,
    `Items lost: ${v.lost.length}`,
    `Commits lost: ${v.commitsLost.length}`,
    `Wall time: ${(r.wallMs / 1000).toFixed(1)} s`,
    r.failures.length === 0
      ? 'RESULT: PASS'
      : `RESULT: FAIL (${r.failures.length})\n${r.failures.map((f) => `  - ${f}`).join('\n')}`,
  ].join('\n');
}

async function main(): Promise<number> {
  const { config, keep } = configFrom(process.argv.slice(2));
  const result = await runTorture(config, (line) =>
    process.stderr.write(`[torture ${new Date().toISOString().slice(11, 19)}] ${line}\n`),
  );
  process.stdout.write(`${formatResult(result)}\n`);
  if (result.failures.length === 0 && !keep) rmSync(result.dir, { recursive: true, force: true });
  else process.stdout.write(`working directory: ${result.dir}\n`);
  return result.failures.length === 0 ? 0 : 1;
}

process.exitCode = await main();
