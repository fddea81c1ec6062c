/**
 * The entry point: parses argv, reads the environment, installs signal handlers, runs one command and
 * maps its result or error to a documented exit code. The only module that calls process.exit.
 */
import { closeSync } from 'node:fs';
import { isatty } from 'node:tty';
import type { OptionValues } from 'commander';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import type { CommandContext } from './context.js';
import { EXIT, FLAG_DEFAULTS } from './context.js';
import { SHARDMOVE_VERSION } from '../api/version.js';
import { redact } from '../plan/secrets.js';
import { codeOf } from '../shared/errors.js';
import { EXIT_BY_CODE, exitCodeOf } from './exit-codes.js';
import { terminalStreams } from './terminal.js';
import { startPrecheck } from '../runtime/precheck/precheck.js';
import { isBusyError, setCheckpointBusyTimeout } from '../store/busy.js';

export { EXIT_BY_CODE } from './exit-codes.js';

/**
 * Errors repeat what was typed: an unknown `--name=value` whole, a plan path. Either may be a token
 * typed in the wrong place, so values of unknown options and token-looking text are masked.
 */
function scrubTyped(s: string): string {
  return redact(s.replace(/(unknown option '[^'=]*=)[^']*'/g, "$1***'"));
}

function number(name: string, min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}`);
    }
    return n;
  };
}

/** Flags several commands take, in the same words in each one's help. */
const FLAG = {
  json: ['--json', 'machine-readable output', false],
  items: ['--items', 'with --json: list every item (kind, id, path, size, source, destination, state)', false],
  yes: ['--yes', 'do not ask (automation); without a terminal it is required', false],
} as const;

/** Where most commands find a plan's checkpoint unless `--state` names one. */
const STATE_HELP = 'checkpoint file (default: state/<name>.db beside the plan, or its checkpoint field)';

/**
 * A subcommand of `parent` that acts on a plan and its checkpoint: `<plan>` and `--state <file>`
 * come first in its help, in the same words as every such command's unless `words` says otherwise.
 */
function planCommand(
  parent: Command,
  name: string,
  description: string,
  words: { plan?: string; state?: string } = {},
): Command {
  return parent
    .command(name)
    .description(description)
    .argument('<plan>', words.plan ?? 'plan YAML file')
    .option('--state <file>', words.state ?? STATE_HELP);
}

/** A command's module runs it: it takes the command line's options and returns the exit code. */
type CommandRunner<O> = (opts: O, ctx: CommandContext) => Promise<number>;

/**
 * The action of a plan command: loads the command's module only when it runs (a command line runs
 * one command, so it loads one), runs it with the plan and the options, and sets its exit code.
 */
function planAction<O extends { plan: string }>(
  ctx: CommandContext,
  setExit: (code: number) => void,
  load: () => Promise<CommandRunner<O>>,
): (plan: string, opts: OptionValues) => Promise<void> {
  return async (plan, opts) => {
    const run = await load();
    setExit(await run({ plan, ...opts } as O, ctx));
  };
}

function buildProgram(ctx: CommandContext, setExit: (code: number) => void): Command {
  const program = new Command('shardmove')
    .description('Move every Git repository off one or more repository storages, safely and resumably.')
    .version(SHARDMOVE_VERSION, '-V, --version', 'print the version and exit')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.stdout.write(s),
      writeErr: (s) => ctx.stderr.write(scrubTyped(s)),
    });

  addSandboxCommand(program, ctx, setExit);
  addPlanCommands(program, ctx, setExit);
  addReadCommands(program, ctx, setExit);
  addSteerCommands(program, ctx, setExit);
  addDemoCommand(program, ctx, setExit);

  return program;
}

/** `shardmove sandbox`: the reference service. */
function addSandboxCommand(program: Command, ctx: CommandContext, setExit: (code: number) => void): void {
  program
    .command('sandbox')
    .description("Run the reference service (the spec's system) for demos, tests and rehearsals.")
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', number('--port', 0, 65535), 0)
    .option('--url-file <file>', 'once ready, write the URL it listens on to this file (removed when it stops)')
    .option('--seed <file>', 'seed YAML (default: the built-in demo seed)')
    .option('--db <file>', 'keep all state in this SQLite file (default: in memory)')
    .option(
      '--gitlab-version <x.y>',
      "the GitLab release to behave as, e.g. 16.5 (default: the seed's instance.version, 17.11.0 when it has none)",
    )
    .option('--workers <n>', 'moves that run at once', number('--workers', 1, 10_000), 10)
    .option('--speed <x>', 'move speed multiplier', number('--speed', 0.001, 1_000_000), 1)
    .option(
      '--move-duration <ms>',
      'every move takes exactly this long (overrides size-based timing)',
      number('--move-duration', 0, 86_400_000),
    )
    .option('--latency <ms>', 'added latency per request', number('--latency', 0, 60_000), 0)
    .option('--error-rate <p>', 'fraction of requests answered 503', number('--error-rate', 0, 1), 0)
    .option('--reset-rate <p>', 'fraction of requests whose socket is destroyed', number('--reset-rate', 0, 1), 0)
    .option('--rate-limit <n>', 'requests per minute before 429', number('--rate-limit', 1, 1e9))
    .option(
      '--move-fail-rate <p>',
      'fraction of moves that fail a checksum check (a tenth of them in cleanup)',
      number('--move-fail-rate', 0, 1),
      0,
    )
    .option(
      '--move-failures <list>',
      'fractions of moves failing by class, e.g. checksum=0.05,no-space=0.01 (classes: checksum, read-only, lease-held, no-space, source-missing, gitaly-unavailable, stuck-queued, stuck-running, tar-failed, timeout)',
    )
    .option('--broken-items <list>', 'kind:id,... whose moves always fail')
    .option('--stuck-rate <p>', 'fraction of moves that never leave started', number('--stuck-rate', 0, 1), 0)
    .option(
      '--interrupt-rate <p>',
      'fraction of moves whose job is rerun while its lease is held (failed, no message, left on the source; before 16.6, no lease: stays started)',
      number('--interrupt-rate', 0, 1),
      0,
    )
    .option(
      '--move-fail-after-switch-rate <p>',
      'fraction of moves whose job dies after the switch (failed, no message, on the destination, source copy left)',
      number('--move-fail-after-switch-rate', 0, 1),
      0,
    )
    .option(
      '--move-fail-after-copy-rate <p>',
      'fraction of moves whose job dies after the copy, before the switch (failed, no message, on the source, the copy left on the destination)',
      number('--move-fail-after-copy-rate', 0, 1),
      0,
    )
    .option(
      '--bulk-delay <duration>',
      "how long each bulk POST's job waits in Sidekiq's queue before it runs, e.g. 75s or 0 (default 2s)",
    )
    .option('--fault-seed <n>', 'seed for every random fault', number('--fault-seed', 0, 2 ** 31), 1)
    .action(async (opts) => {
      const { runSandboxCommand } = await import('./sandbox.js');
      setExit(await runSandboxCommand(opts, ctx));
    });
}

/** The commands that act on a plan: validate, run, copy. */
function addPlanCommands(program: Command, ctx: CommandContext, setExit: (code: number) => void): void {
  program
    .command('validate')
    .description('Check a plan file and report every problem with file:line:col.')
    .argument('<plan>', 'plan YAML file')
    .option('--json', 'one JSON document: valid, diagnostics with file, line and column, and the summary', false)
    .action(async (plan: string, opts: { json: boolean }) => {
      const { runValidateCommand } = await import('./validate.js');
      setExit(await runValidateCommand({ plan, json: opts.json }, ctx));
    });

  planCommand(program, 'run', 'Run a plan, or resume it from its checkpoint.')
    .option('--dry-run', 'read-only rehearsal: nothing is changed on the instance', false)
    .option('--accept-plan-change', 'resume even though the plan changed since the checkpoint', false)
    .option(
      '--retry-quarantined',
      'give quarantined items another retry.max_attempts tries (after fixing them on the instance)',
      false,
    )
    .option(
      '--ignore-schedule',
      "emergencies: schedule outside the plan's maintenance windows (logged in the audit events)",
      false,
    )
    .option(
      '--events <file>',
      "write the run's events as JSON lines (docs/events.md) to this file (appended), or - for standard output",
    )
    .option('--events-interval <duration>', 'how often --events gets a progress event', FLAG_DEFAULTS.eventsInterval)
    .option(
      '--lease <duration>',
      'run lock lease: another runner may take the lock over once the heartbeat is older than this (10s to 24h)',
      FLAG_DEFAULTS.lease,
    )
    .option(
      '--metrics-file <path>',
      'keep Prometheus metrics in this file (node_exporter textfile format), rewritten atomically at every poll',
    )
    .option(
      '--items <file>',
      'with --dry-run: write every item the run would move (kind, id, path, size, source, destination) with the plan hash, to review',
    )
    .option('--force', 'with --dry-run --items: replace the list file if it exists (it may be the one reviewed)', false)
    .option('--only <file>', 'move exactly the items of a reviewed list (made by --dry-run --items) and nothing else')
    .option(
      '--items-format <jsonl|csv>',
      'the format of --items or --only when the file name does not say (.jsonl, .csv)',
    )
    .option(
      '--accept-foreign-moves',
      'start beside moves in flight on the sources that this checkpoint did not schedule (another drain, a move by hand)',
      false,
    )
    .option(
      '--detailed-exitcode',
      'with --dry-run: exit 0 when the run would fit and go, 2 when it would not fit or be refused (as terraform plan)',
      false,
    )
    .action(async (plan: string, opts) => {
      // The checkpoint's whole-file check runs in a worker thread while the run's modules load.
      const precheck = startPrecheck({ planFile: plan, statePath: opts.state, dryRun: opts.dryRun, cwd: ctx.cwd });
      const { runRunCommand } = await import('./run.js');
      setExit(await runRunCommand({ plan, ...opts, precheck }, ctx));
    });

  // `shardmove copy`: copying a storage directory to a new environment (src/copy/).
  planCommand(
    program,
    'copy',
    'Copy a storage directory to a new environment (rsync, tar or backup), with guardrails, checkpoint and verification.',
    { plan: 'copy plan YAML file', state: 'checkpoint file (default: state/<name>.copy.db beside the plan)' },
  )
    .option('--dry-run', 'print the exact commands and what they would change; write nothing', false)
    .option(
      '--wipe-target',
      'tar only: empty the target first (after safety checks), e.g. after an interrupted tar',
      false,
    )
    .option(
      '--wipe-any-target',
      'with --wipe-target: also empty a target not owned by you or without a repository storage layout',
      false,
    )
    .option(
      '--hosts-differ',
      'the ssh target is another machine: lets the copy go on when its machine id or real path cannot be read',
      false,
    )
    .action(planAction(ctx, setExit, async () => (await import('./copy.js')).runCopyCommand));
}

/** The commands that read a checkpoint: status, report, twin. */
function addReadCommands(program: Command, ctx: CommandContext, setExit: (code: number) => void): void {
  planCommand(program, 'status', "Show a run's progress from its checkpoint (works while the run goes on).")
    .option(...FLAG.json)
    .option(...FLAG.items)
    .option('--dry-run', "the dry run's checkpoint (state/<name>.dry-run.db beside the plan)", false)
    .option(
      '--watch',
      'show it again every --interval until Ctrl-C (a terminal: redrawn in place; --json: one line each)',
      false,
    )
    .option('--interval <duration>', 'with --watch: how often (default 2s, at least 1s)')
    .action(planAction(ctx, setExit, async () => (await import('./status.js')).runStatusCommand));

  planCommand(
    program,
    'report',
    'Make a report of a run from its checkpoint: self-contained HTML with charts, or JSON (works while the run goes on).',
  )
    .option('--html <file>', 'write the report as one self-contained HTML file')
    .option('--json', "print the report's data as JSON", false)
    .option(...FLAG.items)
    .action(planAction(ctx, setExit, async () => (await import('./report.js')).runReportCommand));

  planCommand(
    program,
    'twin',
    'Write a sandbox seed with the shape of the instance a finished dry run saw (names replaced), to rehearse the plan on.',
    { state: "the dry run's checkpoint (default: state/<name>.dry-run.db beside the plan)" },
  )
    .option('--out <file>', 'the seed file to write; its items file goes beside it (<out>.items.jsonl)')
    .option('--force', 'replace the seed and items file if they exist', false)
    .action(planAction(ctx, setExit, async () => (await import('./twin.js')).runTwinCommand));
}

/** The commands that steer or undo a run: control, token, weights restore, revert, unlock, and the console. */
function addSteerCommands(program: Command, ctx: CommandContext, setExit: (code: number) => void): void {
  planCommand(
    program,
    'control',
    'Steer a run while it goes on: change its concurrency cap or its thresholds (breaker, rule bounds, latency), pause or unpause it, or stop it (no restart).',
  )
    .option(
      '--concurrency <n>',
      'moves in flight from now on (1-1000), or "plan" for the plan\'s move.concurrency ("auto" hands it back to the limiter of move.concurrency: auto)',
    )
    .option('--pause', 'schedule no new moves; moves in flight are followed to their end', false)
    .option('--unpause', 'schedule again', false)
    .option(
      '--stop',
      'stop the run: no new moves, the moves in flight are followed to their end, then it exits (6); run again continues',
      false,
    )
    .option(
      '--breaker <breaker>',
      "the failure breaker from now on, as retry.pause_after: '{failures: 20, within: 15m}', '{rate: 5%, within: 15m, min_moves: 50}', off, or plan",
    )
    .option('--rule <name>', "a throttle rule whose bound changes (with --above or --below, on the plan's side)")
    .option('--above <x>', "--rule's new bound (a number, or plan)")
    .option('--below <x>', "--rule's new bound (a number, or plan)")
    .option('--latency-p90 <duration>', "the throttle's latency_p90 from now on (10ms-10m), or plan")
    .option(...FLAG.json)
    .action(planAction(ctx, setExit, async () => (await import('./control.js')).runControlCommand));

  const token = program
    .command('token')
    .description(
      'Inspect or revoke any token through the admin token endpoint (the token comes from stdin or --token-file, never argv).',
    );
  for (const action of ['inspect', 'revoke'] as const) {
    const cmd = token
      .command(action)
      .description(
        action === 'inspect'
          ? "Show a token's type, owner, scopes, expiry, last use and state."
          : "Revoke, reset or delete a token, as its type's DELETE does, and say which.",
      )
      .option(
        '--plan <file>',
        "take the admin credential from this plan's instance section (default: GITLAB_URL and GITLAB_TOKEN)",
      )
      .option('--token-file <file>', 'read the token to act on from this file (default: standard input)')
      .option(...FLAG.json);
    if (action === 'revoke')
      cmd.option('--show-new-value', 'print the new value after a reset, when the instance returns one', false);
    cmd.action(async (opts) => {
      const { runTokenCommand } = await import('./token.js');
      setExit(await runTokenCommand({ action, ...opts }, ctx));
    });
  }

  const weights = program
    .command('weights')
    .description('Storage weights: `weights restore` puts back what the run found before its first write.');
  planCommand(
    weights,
    'restore',
    "Put back the weights the checkpoint recorded before the run's first write (asks first).",
  )
    .option(...FLAG.yes)
    .option('--overwrite-weights', 'write them although the weights changed since the run left them', false)
    .action(planAction(ctx, setExit, async () => (await import('./weights.js')).runWeightsRestoreCommand));

  planCommand(
    program,
    'revert',
    'Move every item the run moved back to the storage it came from (its own checkpoint, state/<name>.revert.db; asks first).',
    {
      state:
        "the forward run's checkpoint (default: state/<name>.db beside the plan); the revert keeps its own beside it (<file>.revert.db)",
    },
  )
    .option('--dry-run', 'show what would be moved back and what is skipped; change nothing', false)
    .option(...FLAG.yes)
    .option(
      '--accept-plan-change',
      "revert under a plan that differs from the forward run's (the instance must still hold its moves), or resume under a changed one",
      false,
    )
    .option(
      '--overwrite-weights',
      'write the weights of before the forward run although they were changed since it left them',
      false,
    )
    .option(
      '--retry-quarantined',
      "give the revert's quarantined items another retry.max_attempts tries (after fixing them on the instance)",
      false,
    )
    .option(
      '--only <file>',
      'move back only the items of a reviewed list (the format run --only takes); the rest stay on the destination',
    )
    .option('--items-format <jsonl|csv>', 'the format of --only when the file name does not say (.jsonl, .csv)')
    .option(
      '--events <file>',
      "write the revert's events as JSON lines (docs/events.md) to this file (appended), or - for standard output",
    )
    .option('--events-interval <duration>', 'how often --events gets a progress event', FLAG_DEFAULTS.eventsInterval)
    .option('--lease <duration>', 'lock lease (10s to 24h), as for run', FLAG_DEFAULTS.lease)
    .option('--metrics-file <path>', 'keep Prometheus metrics in this file (node_exporter textfile format), as for run')
    .action(planAction(ctx, setExit, async () => (await import('./revert.js')).runRevertCommand));

  planCommand(
    program,
    'unlock',
    "Remove a run lock whoever holds it (the operator's override); the old holder stops at its next write.",
  )
    .option(...FLAG.yes)
    .action(planAction(ctx, setExit, async () => (await import('./unlock.js')).runUnlockCommand));

  addServeCommand(program, ctx, setExit);
}

/** `shardmove demo`: what `npm start` runs. */
function addDemoCommand(program: Command, ctx: CommandContext, setExit: (code: number) => void): void {
  program
    .command('demo')
    .description('The whole mission on the embedded sandbox: plans/demo.yaml, live progress, verified result.')
    .option('--state <file>', 'checkpoint file (default: a fresh temporary file)')
    .option(
      '--edition <ee|ce>',
      "the sandbox's edition: ee (Ultimate, the default) or ce (Community Edition: snippets moved by bulk and verified by move records, groups skipped)",
      'ee',
    )
    .action(async (opts) => {
      const { runDemoCommand } = await import('./demo.js');
      setExit(await runDemoCommand(opts, ctx));
    });
}

/** `shardmove serve`: the web console (./serve.ts). */
function addServeCommand(program: Command, ctx: CommandContext, setExit: (code: number) => void): void {
  const collect = (value: string, previous: string[] = []) => [...previous, value];
  program
    .command('serve')
    .description(
      'A web console that follows runs live and can pause, unpause, stop them or change their cap: prints its URL (with a token) and serves until Ctrl-C.',
    )
    .argument('[plans...]', 'plan YAML files whose runs to serve')
    .option('--state <file>', 'a checkpoint to serve (may be given more than once)', collect)
    .option('--state-dir <dir>', 'serve every checkpoint (*.db) under this directory')
    .option('--host <host>', 'address to listen on; anything but loopback is warned about', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', number('--port', 0, 65535), 0)
    .option('--read-only', 'serve no control at all', false)
    .action(async (plans: string[], opts) => {
      const { runServeCommand } = await import('./serve.js');
      setExit(await runServeCommand({ plans, ...opts }, ctx));
    });
}

/**
 * One command line in this process, on `ctx`: its exit code, errors mapped as for the executable,
 * nothing exited, no signal handler installed. `main` is this plus the process; the in-process test
 * harness (test/support/sim-harness.ts) runs commands through it on a simulated clock.
 */
export async function runCommandLine(argv: string[], ctx: CommandContext): Promise<number> {
  let exitCode: number = EXIT.ok;
  try {
    await buildProgram(ctx, (c) => (exitCode = c)).parseAsync(argv, { from: 'user' });
  } catch (err) {
    exitCode = exitCodeFor(err, ctx);
  }
  return exitCode;
}

/** Runs the CLI with the given arguments and exits the process with the command's exit code. */
export async function main(argv: string[]): Promise<void> {
  const controller = new AbortController();
  const terminals = [0, 1, 2].filter((fd) => isatty(fd));
  // On every way out: process.exit, and an exception nothing caught (a prompt whose terminal went away).
  process.on('exit', () => releaseHungUpTerminal(terminals));
  const onSignal = signalHandler(controller);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  for (const stream of [process.stdout, process.stderr]) keepGoingWithoutOutput(stream);

  const ctx: CommandContext = {
    // Everything printed passes through one escape of control characters (names come from the instance).
    ...terminalStreams(process.stdout, process.stderr),
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    signal: controller.signal,
  };
  // How long a command waits for another process's write lock on a checkpoint (tests shorten it).
  const busyMs = Number(process.env.CHECKPOINT_BUSY_TIMEOUT_MS);
  if (process.env.CHECKPOINT_BUSY_TIMEOUT_MS && Number.isSafeInteger(busyMs) && busyMs >= 0)
    setCheckpointBusyTimeout(busyMs);
  const exitCode = await runCommandLine(argv, ctx);
  process.exitCode = exitCode;
  // What was printed reaches its reader first: to a pipe, Node writes asynchronously, and an exit
  // with writes still queued would cut `status --json | jq` at the pipe's 64 KiB, exit 0.
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  // Pools, timers and servers are closed by the commands; exit explicitly so a stray handle cannot hang CI.
  process.exit(exitCode);
}

/**
 * Resolves once everything written to `stream` so far has been handed to the operating system, or
 * at once when the stream can no longer take it (a reader that left: EPIPE; a hung-up terminal).
 * A write's callback runs after every earlier write's, so an empty write marks the end of the queue.
 * A reader that never reads holds the command, as it would hold any program writing to it; a second
 * Ctrl-C still exits at once.
 */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableEnded || stream.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('error', done);
      stream.off('close', done);
      resolve();
    };
    stream.once('error', done);
    stream.once('close', done);
    stream.write('', done);
  });
}

/**
 * SIGINT, SIGTERM and SIGHUP (a dropped SSH session, a closed terminal) all stop a command the same
 * way: the step in flight returns, the checkpoint is saved, the run's end is recorded, exit 130. A
 * second SIGINT or SIGTERM means "now" (every checkpoint write is a transaction, so nothing is
 * half-written). A hangup never does: it comes twice when the terminal goes (from the kernel, and
 * again from the shell that passes it on to its jobs), and the first must be allowed to finish.
 */
function signalHandler(controller: AbortController): (name: NodeJS.Signals) => void {
  return (name) => {
    if (!controller.signal.aborted) controller.abort(new Error(`received ${name}`));
    else if (name !== 'SIGHUP') process.exit(EXIT.interrupted);
  };
}

/**
 * At exit Node restores the settings of each standard stream that was a terminal when it started,
 * and Node 20 aborts (exit 134, after the run's end was recorded) when that terminal is gone after
 * a hangup (https://github.com/nodejs/node/issues/51519, fixed in later releases), or crashes when a
 * prompt had the terminal in raw mode. Closing those streams first (in an exit listener) makes it
 * skip them, so a hung-up command exits with its own code. Only streams that were a terminal and are
 * none now (a hung-up terminal answers no terminal request) are closed.
 */
function releaseHungUpTerminal(terminals: readonly number[]): void {
  for (const fd of terminals) {
    if (isatty(fd)) continue;
    try {
      closeSync(fd);
    } catch {
      // Already closed: nothing for Node to restore either.
    }
  }
}

/**
 * When the terminal is gone (a hangup: writes fail with EIO) or a pipe's reader left (EPIPE), what
 * would have been printed is dropped and the command goes on: an unhandled error on standard output
 * would end a drain half-way with no end recorded. The checkpoint, the log and an events file keep
 * the run's record; a hangup that should stop the run arrives as SIGHUP.
 */
function keepGoingWithoutOutput(stream: NodeJS.WriteStream): void {
  stream.on('error', () => undefined);
}

function exitCodeFor(err: unknown, ctx: CommandContext): number {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0)
      return EXIT.ok;
    return EXIT.invalid;
  }
  const code = codeOf(err) ?? '';
  const message = scrubTyped(err instanceof Error ? err.message : String(err));
  if (code in EXIT_BY_CODE) {
    ctx.stderr.write(`shardmove: ${message}\n`);
    return exitCodeOf(err);
  }
  if (code.startsWith('SHARDMOVE_')) {
    ctx.stderr.write(`shardmove: ${message} (${code})\n`);
    return exitCodeOf(err);
  }
  // A checkpoint write that waited past the busy timeout where no command named the holder.
  if (isBusyError(err)) {
    ctx.stderr.write(
      `shardmove: a checkpoint is busy: another process held a write lock on it past the busy timeout (${message}); nothing more was written: run the command again once it is free\n`,
    );
    return EXIT.refused;
  }
  ctx.stderr.write(
    `shardmove: internal error: ${message}\n` +
      `This is a bug. Please report it with the log file and this stack:\n${err instanceof Error ? scrubTyped(err.stack ?? '') : ''}\n`,
  );
  return EXIT.failed;
}
