/**
 * `shardmove report PLAN [--state FILE] [--html FILE] [--json]`: the run's report from its
 * checkpoint, as a self-contained HTML file (charts and tables, printable) and/or as JSON on stdout;
 * `--html -` writes the HTML to stdout instead. Read-only like `status`: it works while the run goes
 * on, and needs no credentials. Exit 0 when a report was made; 1 when there is no checkpoint or the
 * HTML file could not be written; 2 for invalid options (an --html path whose directory does not
 * exist, or is not writable, that is anything but a regular file (src/cli/outputs.ts), or that is
 * the checkpoint, a file beside it or the plan; `--html -` with `--json`).
 */
import { LEFT_SELECTION_LISTED, leftSelectionOf } from '../report/left-selection.js';
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { writeFileAtomic } from '../files/atomic.js';
import type { RunContext } from '../machine/types.js';
import { buildReportData } from '../report/html/data.js';
import type { ReportData } from '../report/html/data.js';
import { renderHtmlReport } from '../report/html/render.js';
import { buildStatusReport, capView } from '../report/status.js';
import { NO_CHECKPOINT } from '../runtime/errors.js';
import { systemClock } from '../shared/clock.js';
import { withCopyKnowledge } from '../runtime/copies.js';
import { lockHolder, openExistingCheckpoint, paceSourceOf, readNetworks, readRevertView } from '../runtime/status.js';
import type { StatusStore } from '../store/views.js';
import type { StoredEvent } from '../store/types.js';
import type { CommandContext } from './context.js';
import { EXIT } from './context.js';
import { ArgsError } from './errors.js';
import { readItems } from '../runtime/lists/items-list.js';
import { checkOutputPath, checkpointFiles, refuseOutputsThatAreInputs, resolveOutputPath } from './outputs.js';
import { resolveRunCheckpoint } from './plan-identity.js';

/** The event log in pages, so a million-item checkpoint is not parsed into one array first. */
function* allEvents(store: Pick<StatusStore, 'readEvents'>): Generator<StoredEvent> {
  let after = 0;
  for (;;) {
    const page = store.readEvents(after, 10_000);
    if (page.length === 0) return;
    yield* page;
    after = page[page.length - 1]!.seq;
  }
}

/** The report's data from the checkpoint at `file` (read-only; throws SHARDMOVE_NO_CHECKPOINT when there is none). */
export function readReportData(
  file: string,
  now: number,
  planConcurrency: number | null,
  planFile: string | null = null,
): ReportData {
  // The JSON and the HTML list every fork network's members (a few hundred networks at most).
  const store = openExistingCheckpoint(file, { readOnly: true });
  try {
    // Read as `status` reads (no transaction, which would hold up the writer): while a run goes on,
    // the events may run a few moments past the counts; the next report catches up.
    const saved = store.loadRun();
    // How the last process ended: a run stopped on request reads as stopped, not interrupted.
    const last = store.lastEventOf(['run.finished', 'run.interrupted', 'run.stopped']);
    const lock = lockHolder(store);
    const status = withCopyKnowledge(file, store, (copies) =>
      buildStatusReport(file, saved, store.summary(now), now, {
        lock,
        planConcurrency,
        last,
        copies,
        givenList: store.givenList()?.file ?? null,
        leftSelection: leftSelectionOf(store.leftSelection(LEFT_SELECTION_LISTED)),
        networks: readNetworks(store, saved, true),
        // The live run's pace and what holds it, as status and the progress line say them.
        cap: capView(store.lastEventOf(['cap.changed'])),
        pace: paceSourceOf(store),
        revert: readRevertView(file, store, now),
      }),
    );
    const context = (saved?.snapshot as { context?: RunContext } | undefined)?.context ?? null;
    return buildReportData({ status, context, events: allEvents(store), now, planFile });
  } finally {
    store.close();
  }
}

export async function runReportCommand(
  opts: { plan: string; state?: string; html?: string; json: boolean; items?: boolean },
  ctx: CommandContext,
): Promise<number> {
  if (!opts.html && !opts.json) throw new ArgsError('report: say what to make: --html FILE, --json, or both');
  if (opts.items && !opts.json) throw new ArgsError('report: --items lists every item in the JSON output: add --json');
  if (opts.html === '-' && opts.json)
    throw new ArgsError('report: --html - and --json both write to standard output: give one of them, or --html FILE');
  // Before the checkpoint is read (which may take a while): a path the report cannot go to.
  const target =
    opts.html === undefined ? undefined : resolveOutputPath('report', '--html', opts.html, ctx, { stream: true });
  const toStdout = target === '-';
  const out = target === undefined || toStdout ? undefined : target;
  if (out !== undefined) checkHtmlTarget(out);
  const { file, planConcurrency } = await resolveRunCheckpoint(opts, ctx);
  // Never over the checkpoint it reads (src/cli/outputs.ts), nor the plan.
  if (out !== undefined)
    refuseOutputsThatAreInputs(
      'report',
      [[out, `--html ${out}`]],
      [[resolve(ctx.cwd, opts.plan), `the plan ${resolve(ctx.cwd, opts.plan)}`], ...checkpointFiles(file)],
    );
  // Only ever a regular file (src/cli/outputs.ts), still before the checkpoint is read.
  if (out !== undefined) checkOutputPath('report', '--html', opts.html!, ctx);
  let data: ReportData;
  try {
    data = readReportData(file, (ctx.clock ?? systemClock).now(), planConcurrency, opts.plan);
  } catch (err) {
    if ((err as { code?: unknown }).code === NO_CHECKPOINT) {
      ctx.stderr.write(`shardmove report: ${(err as Error).message}\n`);
      return EXIT.failed;
    }
    throw err;
  }
  if (toStdout) ctx.stdout.write(renderHtmlReport(data));
  if (out !== undefined) {
    // Written beside it and renamed: a failed write (a full disk) leaves no half-written report.
    try {
      writeFileAtomic(out, renderHtmlReport(data), { mode: 0o644 });
    } catch (err) {
      ctx.stderr.write(`shardmove report: cannot write ${out}: ${(err as Error).message}\n`);
      return EXIT.failed;
    }
    ctx.stderr.write(`report written to ${out}\n`);
  }
  if (opts.json)
    ctx.stdout.write(`${JSON.stringify(opts.items ? { ...data, items: readItems(file) } : data, null, 2)}\n`);
  return EXIT.ok;
}

/** Throws SHARDMOVE_ARGS_INVALID when `--html` names a place no file can be written to. */
function checkHtmlTarget(out: string): void {
  const dir = dirname(out);
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    throw new ArgsError(`report: --html ${out}: the directory ${dir} does not exist`);
  }
  if (!isDir) throw new ArgsError(`report: --html ${out}: ${dir} is not a directory`);
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    throw new ArgsError(`report: --html ${out}: the directory ${dir} is not writable`);
  }
  let target;
  try {
    target = statSync(out);
  } catch {
    return;
  }
  if (target.isDirectory()) throw new ArgsError(`report: --html ${out} is a directory; name a file`);
}
