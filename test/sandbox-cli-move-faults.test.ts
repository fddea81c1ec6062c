// The sandbox command's move-fault flags: --interrupt-rate (a rerun while the lease is
// held: failed without a message, left on the source) and --move-fail-after-switch-rate (the job
// dies after the switch: failed without a message, on the destination, the source copy left).
// The `sandbox` command line runs in this process (runCommandLine, as the executable runs it):
// its flags, its refusals and their exit code are the subject, not a process of its own.
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, tempDir } from './support/cli-harness.js';
import { commandHere } from './support/sim-speeda.js';
import { sandboxCommandHere } from './support/sim-speedh.js';
import { until } from './support/until.js';

const STORAGES = ['default', 'nfs-1', 'nfs-2', 'cluster'];

/** `shardmove ARGS` in this process, as `runCli` runs the executable. */
const runCli = (args: string[], opts: { cwd: string }) => commandHere(args, { ...opts, env: {} });

async function json(url: string, method = 'GET', body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: { 'private-token': ADMIN_TOKEN, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await res.json()) as Record<string, unknown>;
}

/** Moves project 1 off its storage and waits for the move to end; the move and where the item is then. */
async function moveProjectOne(flags: string[]) {
  const sb = await sandboxCommandHere(['--move-duration', '20', '--fault-seed', '3', ...flags]);
  const source = (await json(`${sb.url}/-/sandbox/items/project/1`)).storage as string;
  const destination = STORAGES.find((s) => s !== source) as string;
  const made = await json(`${sb.url}/api/v4/projects/1/repository_storage_moves`, 'POST', {
    destination_storage_name: destination,
  });
  const move = await until(
    () => json(`${sb.url}/api/v4/project_repository_storage_moves/${made.id as number}`),
    (m) => m.state === 'failed' || m.state === 'finished',
    10_000,
  );
  return { source, destination, move, item: await json(`${sb.url}/-/sandbox/items/project/1`) };
}

describe('shardmove sandbox move-fault flags', () => {
  it('--move-fail-after-switch-rate 1: failed without a message, on the destination, the source copy left', async () => {
    const { source, destination, move, item } = await moveProjectOne(['--move-fail-after-switch-rate', '1']);
    expect(move).toMatchObject({ state: 'failed', error_message: null });
    expect(item).toMatchObject({ storage: destination, read_only: false, stale_copies: [source] });
  });

  it('--interrupt-rate 1: failed without a message, still on the source, writable', async () => {
    const { source, move, item } = await moveProjectOne(['--interrupt-rate', '1']);
    expect(move).toMatchObject({ state: 'failed', error_message: null });
    expect(item).toMatchObject({ storage: source, read_only: false, stale_copies: [] });
  });

  it('refuses rates that add up to more than one (exit 2)', async () => {
    const r = await runCli(
      ['sandbox', '--port', '0', '--interrupt-rate', '0.6', '--move-fail-after-switch-rate', '0.5'],
      { cwd: tempDir('cli-faults') },
    );
    expect(r.code).toBe(2);
    // In the flags' own terms, not the sandbox's option names.
    expect(r.stderr).toContain(
      '--interrupt-rate 0.6 + --move-fail-after-switch-rate 0.5 make 1.1 of the moves fail; together they must not exceed 1',
    );
    expect(r.stderr).not.toMatch(/interruptRate|failAfterSwitchRate|moveFailures/);
    const withClasses = await runCli(
      ['sandbox', '--port', '0', '--move-fail-rate', '0.5', '--move-failures', 'checksum=0.4,no-space=0.2'],
      { cwd: tempDir('cli-faults') },
    );
    expect(withClasses.code).toBe(2);
    expect(withClasses.stderr).toContain('--move-fail-rate 0.5 + --move-failures 0.6 make 1.1 of the moves fail');
  });

  it("refuses a --move-failures class given twice, and a class rate over 1, in the flag's terms (exit 2)", async () => {
    const twice = await runCli(
      ['sandbox', '--port', '0', '--move-failures', 'no-space=0.1,checksum=0.1,no-space=0.2'],
      {
        cwd: tempDir('cli-faults'),
      },
    );
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain(
      '--move-failures: no-space is given twice (no-space=0.1 and no-space=0.2); give each class once',
    );
    expect(twice.stdout).toBe('');
    const over = await runCli(['sandbox', '--port', '0', '--move-failures', 'checksum=1.5'], {
      cwd: tempDir('cli-faults'),
    });
    expect(over.code).toBe(2);
    expect(over.stderr).toContain('--move-failures: checksum=1.5: a rate is a fraction of moves, from 0 to 1');
    expect(over.stdout).toBe('');
  });

  it('refuses a --bulk-delay that is not a duration, negative or over a day, before it listens (exit 2)', async () => {
    for (const [value, says] of [
      ['75', 'a bare number is ambiguous'],
      ['-5s', 'not a duration'],
      ['25h', 'more than a day'],
    ] as const) {
      const r = await runCli(['sandbox', '--port', '0', '--bulk-delay', value], { cwd: tempDir('cli-faults') });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`sandbox --bulk-delay: "${value}"`);
      expect(r.stderr).toContain(says);
      expect(r.stdout).toBe('');
    }
  });
});
