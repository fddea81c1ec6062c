/**
 * `run`'s item-list flags: `--dry-run --items FILE` writes what the dry run would move, `--only FILE`
 * applies a reviewed list, `--items-format jsonl|csv` when a file's name does not say. Every
 * combination that cannot mean anything is refused before the run (exit 2), and the list's path too
 * when it cannot be written (a directory, a folder that is missing or not writable, anything but a
 * regular file: src/cli/outputs.ts), or when a list is there already: it may be the one reviewed, so
 * it is replaced only with `--force`.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { outputTargetOf } from '../files/atomic.js';
import type { ItemsFormat } from '../runtime/lists/items-format.js';
import { formatOfName } from '../runtime/lists/items-format.js';
import { writeDryRunItems } from '../runtime/lists/items-list.js';
import { openExistingCheckpoint } from '../runtime/status.js';
import type { RunOutcome } from '../runtime/types.js';
import type { CommandContext, ExitCode } from './context.js';
import { EXIT, clockOf } from './context.js';
import { ArgsError } from './errors.js';
import { resolveOutputPath } from './outputs.js';

export interface ItemFlags {
  dryRun: boolean;
  retryQuarantined: boolean;
  items?: string | undefined;
  only?: string | undefined;
  itemsFormat?: string | undefined;
  /** `--force`: replace an --items file that exists. */
  force?: boolean | undefined;
}

/** The `--items-format` given, or null; throws ArgsError for anything else. */
export function parseItemsFormat(raw: string | undefined, command: 'run' | 'revert' = 'run'): ItemsFormat | null {
  if (raw === undefined) return null;
  if (raw === 'jsonl' || raw === 'csv') return raw;
  throw new ArgsError(`${command}: --items-format must be jsonl or csv; got "${raw}"`);
}

/**
 * Refuses the combinations that cannot mean anything, and an --items path that cannot be written;
 * returns the format of the list to write (null: no list).
 */
export function checkItemFlags(flags: ItemFlags, ctx: Pick<CommandContext, 'cwd'>): ItemsFormat | null {
  const format = parseItemsFormat(flags.itemsFormat);
  if (flags.only !== undefined) {
    if (flags.dryRun)
      throw new ArgsError(
        'run: --only applies a reviewed list; a --dry-run makes one (--dry-run --items FILE). Give one of them',
      );
    if (flags.items !== undefined)
      throw new ArgsError('run: --items writes a list in a dry run; --only applies one. Give one of them');
    return null;
  }
  if (flags.force && flags.items === undefined)
    throw new ArgsError('run: --force replaces a list that exists: it goes with --dry-run --items FILE');
  if (flags.items === undefined) {
    if (format !== null) throw new ArgsError('run: --items-format goes with --items FILE or --only FILE');
    return null;
  }
  if (!flags.dryRun)
    throw new ArgsError(
      'run: --items FILE writes the list a dry run would move: add --dry-run (a real run applies a list with --only FILE)',
    );
  const out = resolveOutputPath('run', '--items', flags.items, ctx);
  const chosen = format ?? formatOfName(out);
  if (chosen === null)
    throw new ArgsError(
      `run: --items ${flags.items}: name the format: a .jsonl or .csv file, or --items-format jsonl|csv`,
    );
  try {
    if (statSync(out).isDirectory()) throw new ArgsError(`run: --items ${flags.items} is a directory; name a file`);
  } catch (err) {
    if (err instanceof ArgsError) throw err;
  }
  try {
    accessSync(dirname(out), constants.W_OK);
  } catch {
    throw new ArgsError(`run: --items ${flags.items}: the folder ${dirname(out)} is missing or not writable`);
  }
  return chosen;
}

/**
 * Refuses (exit 2) an --items list that is there without --force: it may be the one an operator
 * reviewed and trimmed, and a dry run run again must not put back what the review took out. Called
 * once the outputs were compared with the inputs (src/cli/outputs.ts); checked again as the list is
 * written (src/files/atomic.ts).
 */
export function refuseExistingList(flags: ItemFlags, ctx: Pick<CommandContext, 'cwd'>): void {
  if (flags.items === undefined || flags.force) return;
  if (outputTargetOf(resolve(ctx.cwd, flags.items)).kind === 'file')
    throw new ArgsError(
      `run: --items ${flags.items} exists (it may be a list you reviewed); pass --force to replace it, or name another file`,
    );
}

/**
 * After a dry run: writes its list when it finished, and says so (or why not). Returns the exit
 * code to give: the run's, or 1 when the list could not be written.
 */
export function afterDryRun(
  outcome: RunOutcome,
  items: string,
  format: ItemsFormat,
  code: ExitCode,
  ctx: Pick<CommandContext, 'cwd' | 'stdout' | 'stderr' | 'clock'>,
  force = false,
): ExitCode {
  if (outcome.kind !== 'final' || outcome.state === 'failed') {
    ctx.stderr.write(`no item list written to ${items}: the dry run did not finish\n`);
    return code;
  }
  const checkpoint = outcome.report.checkpointFile;
  if (!checkpoint) return code;
  try {
    const written = writeDryRunItems(checkpoint, resolve(ctx.cwd, items), format, clockOf(ctx).now(), {
      replace: force,
    });
    ctx.stdout.write(
      `Item list: ${written.items} item(s) the run would move, written to ${items} (${format}); review it, then apply exactly it with --only ${items}\n`,
    );
    for (const u of written.unlisted)
      ctx.stdout.write(
        `  ${u.kind} on ${u.source} are not in it: the instance does not expose their storage, so they cannot be listed (a run with --only does not move them)\n`,
      );
    return code;
  } catch (err) {
    ctx.stderr.write(`shardmove: cannot write the item list ${items}: ${(err as Error).message}\n`);
    return EXIT.failed;
  }
}

/** After a run of a reviewed list: the listed items it did not move because they are no longer where the list says. */
export function afterOnlyRun(outcome: RunOutcome, ctx: Pick<CommandContext, 'stdout'>): void {
  if (outcome.kind !== 'final' || !outcome.report.checkpointFile) return;
  const store = openExistingCheckpoint(outcome.report.checkpointFile, { readOnly: true });
  try {
    const left = (['projects', 'snippets', 'groups'] as const).flatMap((k) =>
      store.itemsInState(k, null, 'left', Number.MAX_SAFE_INTEGER),
    );
    if (left.length === 0) return;
    ctx.stdout.write(
      `\nNot moved: no longer where the list says (${left.length}); nothing was moved in their place:\n`,
    );
    for (const r of left.slice(0, 50))
      ctx.stdout.write(`  ${r.kind} ${r.id} (${r.name}) listed on ${r.source}: ${outcome.redact(r.lastError ?? '')}\n`);
    if (left.length > 50)
      ctx.stdout.write(`  ... and ${left.length - 50} more (status --json --items lists them all)\n`);
  } finally {
    store.close();
  }
}
