/**
 * `npm run outage`: the instance goes away for real minutes in the middle of a drain, and the run
 * is expected to hold, say so, go on once the instance answers, and end 0 with nothing lost or
 * moved twice. It waits real time (two minutes by default) with the shipped settings (a probe
 * every 10 s, `instance.outage_wait: 30m`), which is why it is a script and not a test; the tests
 * cover the same path in seconds (test/cli-outage.test.ts, test/cli-outage-freeze.test.ts).
 *
 *   npm run outage -- [--mode kill|freeze|both] [--down SECONDS] [--projects N]
 *
 * `kill`: the sandbox is SIGKILLed and started again on its port and file (connections refused);
 * `freeze`: it is SIGSTOPped and continued (connections hang until `instance.timeout`).
 * Prints the figures; exits 1 when any check failed.
 */
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { OutageConfig, OutageResult } from '../test/support/outage-run.js';
import { runOutage } from '../test/support/outage-run.js';

function positive(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive whole number, got "${raw}"`);
  return n;
}

function format(r: OutageResult): string {
  const c = r.config;
  const v = r.verdict;
  const back = r.answered.map((a) => `${(a.downMs / 1000).toFixed(1)} s`).join(', ') || 'never';
  return [
    `outage (${c.mode}) of ${c.downMs / 1000} s: ${v.items} items, concurrency ${c.concurrency}, ${c.workers} sandbox workers, moves of ${c.moveDurationMs} ms`,
    `  moves in flight when the instance went away: ${r.inFlightAtOutage}`,
    `  hold: ${r.unreachable} instance.unreachable, answered again after ${back}`,
    ...r.heldLines.map((l) => `  said: ${l.trim()}`),
    `  run: exit ${r.run.code} after ${(r.run.ms / 1000).toFixed(1)} s`,
    `  items: ${v.onDestination} of ${v.items} on the destination, ${v.quarantined.length} quarantined, ${v.lost.length} lost`,
    `  moves: ${v.moves}, moved twice: ${v.duplicates.length}, from the destination: ${v.movesOnDestination.length}`,
    r.failures.length === 0 ? '  RESULT: PASS' : `  RESULT: FAIL\n${r.failures.map((f) => `    - ${f}`).join('\n')}`,
  ].join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      mode: { type: 'string', default: 'both' },
      down: { type: 'string', default: '120' },
      projects: { type: 'string', default: '120' },
    },
  });
  const mode = values.mode;
  if (mode !== 'kill' && mode !== 'freeze' && mode !== 'both')
    throw new Error(`--mode must be kill, freeze or both, got "${mode}"`);
  const modes: readonly OutageConfig['mode'][] = mode === 'both' ? ['kill', 'freeze'] : [mode];
  const projects = positive('--projects', values.projects);
  const base: Omit<OutageConfig, 'mode' | 'expectHold'> = {
    downMs: positive('--down', values.down) * 1000,
    projects,
    snippets: Math.ceil(projects / 10),
    groups: Math.ceil(projects / 20),
    concurrency: 8,
    workers: 8,
    moveDurationMs: 1500,
    timeout: '10s',
    outageWait: '30m',
    afterMs: 5 * 60_000,
  };
  let failed = 0;
  for (const m of modes) {
    // Frozen for less than a minute, the requests only run into their 10 s timeout and retries.
    const expectHold = m === 'kill' || base.downMs >= 60_000;
    const r = await runOutage({ ...base, mode: m, expectHold }, (line) =>
      process.stderr.write(`[outage ${new Date().toISOString().slice(11, 19)}] ${line}\n`),
    );
    process.stdout.write(`${format(r)}\n`);
    if (r.failures.length === 0) rmSync(r.dir, { recursive: true, force: true });
    else {
      failed++;
      process.stdout.write(`  working directory: ${r.dir}\n`);
    }
  }
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main();
