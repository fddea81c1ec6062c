/**
 * One drain per storage at a time, with real processes over real HTTP: while a run moves, the
 * same plan under another `--state` is refused at once on this host (the registry of drains), and
 * from "another host" (a registry of its own) by pre-flight, which sees moves in flight on the
 * sources that its checkpoint did not schedule. A dry run beside it says a real run would be
 * refused (`--detailed-exitcode`: 2), and 0 once nothing is in flight.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { flat, runCli, runPrinted, sandboxEnv } from './support/cli-harness.js';
import { ended, startHeldSandbox } from './support/held-sandbox.js';
import { setup } from './support/stop-judge.js';
import { until } from './support/until.js';

function registry(): string {
  const d = mkdtempSync(join(tmpdir(), 'shardmove-registry-'));
  onTestFinished(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

describe('a second drain of the same storages (separate processes, real HTTP)', { timeout: 120_000 }, () => {
  it('is refused while the first moves, on this host and from another, and a dry run says so', async () => {
    const { dir, plan } = setup('one-drain', 4);
    const file = join(dir, 'first.db');
    const held = await startHeldSandbox(dir, { projects: 20, snippets: 0, groups: 0 });
    const here = registry();
    const env = { ...sandboxEnv(held.url), XDG_RUNTIME_DIR: here };
    const cli = (args: string[], extra: Record<string, string> = {}) =>
      runCli(args, { cwd: dir, env: { ...env, ...extra } });
    // The first run, under a checkpoint of its own, with this test's registry.
    const first = cli(['run', plan, '--state', file]);
    await until(
      async () => (await held.moves()).filter((m) => !ended(m)).length,
      (k) => k >= 4,
      30_000,
    );
    const before = (await held.moves()).length;

    // The same plan under another checkpoint (its default one), on this host: refused at once, naming the live run.
    const second = await cli(['run', plan]);
    expect(second.code, second.stderr).toBe(4);
    expect(second.stderr).toMatch(
      /another run drains (default|nfs-1|nfs-2) of http:\/\/127\.0\.0\.1:\d+ on this host: pid \d+ on /,
    );
    expect(second.stderr).toContain(`checkpoint ${file}`);
    expect(second.stderr).toMatch(/started \d{4}-\d\d-\d\dT/);
    expect(second.stderr).not.toContain('glpat-');

    // From another host (another registry): pre-flight sees the first run's moves and refuses.
    const elsewhere = await cli(['run', plan, '--state', join(dir, 'elsewhere.db')], { XDG_RUNTIME_DIR: registry() });
    expect(elsewhere.code, elsewhere.stderr).toBe(4);
    expect(flat(elsewhere.stdout + elsewhere.stderr)).toContain('SHARDMOVE_PREFLIGHT_FOREIGN_MOVES');
    expect(flat(elsewhere.stdout)).toMatch(
      /4 move\(s\) this checkpoint did not schedule are in flight on the sources: 4 projects move\(s\)/,
    );
    expect(flat(elsewhere.stdout)).toMatch(/the oldest created \d{4}-\d\d-\d\dT/);
    expect(flat(elsewhere.stdout)).toContain('--accept-foreign-moves');
    // Neither wrote a move.
    expect((await held.moves()).length).toBe(before);

    // A dry run beside it: complete, but a real run would be refused, twice; --detailed-exitcode says 2.
    const dry = await cli(['run', plan, '--dry-run', '--detailed-exitcode']);
    expect(dry.code, dry.stderr).toBe(2);
    expect(flat(dry.stdout)).toMatch(/^DRY RUN COMPLETE, BUT A REAL RUN WOULD BE REFUSED \(\d+ reasons below\)/);
    expect(flat(dry.stdout)).toMatch(
      /A real run would be refused: - another run drains \S+ of this instance on this host: pid \d+/,
    );
    expect(flat(dry.stdout)).toContain(' - 4 move(s) this checkpoint did not schedule');

    // The stop command the refusal printed, as printed: the first run ends (6).
    const printed = /stop it: (shardmove control .* --stop)$/m.exec(second.stderr)?.[1];
    expect(printed).toBeDefined();
    const stopped = await runPrinted(printed!, { cwd: dir, env });
    expect(stopped.code, stopped.stderr).toBe(0);
    const done = await held.pumpUntil(first);
    expect(done.code, done.stderr).toBe(6);
    const again = await cli(['run', plan, '--dry-run', '--detailed-exitcode']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(flat(again.stdout)).toMatch(/^DRY RUN COMPLETE: nothing was changed/);
    // The registry keeps nothing of runs that ended.
    expect(existsSync(join(here, 'shardmove', 'drains'))).toBe(true);
    expect(readdirSync(join(here, 'shardmove', 'drains'))).toEqual([]);
  });
});
