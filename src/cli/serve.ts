/**
 * `shardmove serve [PLAN...] [--state FILE]... [--state-dir DIR] [--host H] [--port N] [--read-only]`:
 * the web console. One process serves every run it is given: each plan's checkpoint (its dry run's
 * while it has no real run, as `status` does), each `--state` file, and every checkpoint under
 * `--state-dir`. Its first line of standard output is its URL with a random token (as Jupyter's);
 * it binds 127.0.0.1 unless told otherwise, and says so on stderr when it is told otherwise.
 * Ctrl-C or SIGTERM ends it with exit 0.
 *
 * It reads checkpoints as `status` and `report` do (read-only, no lock); its controls write the same
 * control record `shardmove control` writes, marked as from the console (../serve/server.ts).
 */
import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { isIP } from 'node:net';
import type { Server } from 'node:http';
import { applyControl } from '../runtime/control/control.js';
import type { ControlChange } from '../runtime/control/control.js';
import { readCapChanges, readRunContext, readStatus } from '../runtime/status.js';
import { geoAndWeightsLines } from '../report/final.js';
import { renderStatus } from '../report/status.js';
import type { StatusReport } from '../report/status.js';
import { renderHtmlReport } from '../report/html/render.js';
import { describeChange } from '../report/control-words.js';
import { escapeControls } from '../report/escape.js';
import { headlineOf } from '../serve/headline.js';
import { newToken } from '../serve/auth.js';
import { checkpointsUnder, servedRun, uniqueRuns } from '../serve/runs.js';
import type { ServedRun } from '../serve/runs.js';
import { startConsole } from '../serve/server.js';
import type { ConsoleControl, RunReader } from '../serve/server.js';
import type { CommandContext } from './context.js';
import { EXIT, clockOf } from './context.js';
import { ArgsError } from './errors.js';
import { describeStop } from './control.js';
import { readPlanGiven } from './plan-given.js';
import { statusCheckpoint } from './status.js';
import { readReportData } from './report.js';

export interface ServeOptions {
  plans: string[];
  state?: string[];
  stateDir?: string;
  host: string;
  port: number;
  readOnly: boolean;
}

/** How long one look at a run serves: a page's refresh asks for its list, status and text at once. */
const LOOK_MS = 1_000;
/** The cap's changes a page shows, newest first. */
const CAP_CHANGES = 20;

/**
 * The reads and the control of the console, as the commands make them. A checkpoint is checked
 * whole (SQLite's quick_check, as every command's open does) at the console's first look, and again
 * only when the file is another one (a new inode); each look in between reads only what status
 * reads, so a refresh of a million-item checkpoint does not read all of its pages.
 */
export function commandReader(now: () => number = () => Date.now()): RunReader {
  const checked = new Map<string, string>();
  const looks = new Map<string, { at: number; report: StatusReport }>();
  const identity = (file: string): string | null => {
    try {
      const st = statSync(file);
      return `${st.dev}:${st.ino}`;
    } catch {
      return null;
    }
  };
  const look = (run: ServedRun): StatusReport => {
    const t = now();
    const cached = looks.get(run.id);
    if (cached && t - cached.at < LOOK_MS) return cached.report;
    const id = identity(run.file);
    const report = readStatus(run.file, t, run.plan, { checked: id !== null && checked.get(run.id) === id });
    if (id !== null) checked.set(run.id, id);
    looks.set(run.id, { at: t, report });
    return report;
  };
  return {
    status: (run) => look(run),
    // Escaped as the terminal's streams escape `status`: names and messages from the instance.
    text: (run) =>
      escapeControls(
        renderStatus(look(run), { planFile: run.planFile ?? '<plan>', statePath: run.planFile ? undefined : run.file }),
      ),
    headline: (run) => {
      const r = look(run);
      const name = r.plan ?? run.plan?.name ?? basename(run.file);
      return { name: escapeControls(name), state: r.state, headline: escapeControls(headlineOf(r)) };
    },
    reportHtml: (run) => renderHtmlReport(readReportData(run.file, now(), run.plan?.concurrency ?? null, run.planFile)),
    reportJson: (run) => readReportData(run.file, now(), run.plan?.concurrency ?? null, run.planFile),
    weights: (run) => {
      look(run);
      const c = readRunContext(run.file, { checked: checked.get(run.id) === identity(run.file) });
      return c ? geoAndWeightsLines(c).map(escapeControls) : [];
    },
    // Read after a look, which checked the file whole.
    caps: (run) => {
      look(run);
      return readCapChanges(run.file, CAP_CHANGES, { checked: checked.get(run.id) === identity(run.file) }).map(
        (c) => ({ ...c, reason: escapeControls(c.reason) }),
      );
    },
    control: (run, c) => {
      // What a control changed shows at the next look, not a second later.
      looks.delete(run.id);
      return controlFromConsole(run, c, now());
    },
  };
}

function controlFromConsole(run: ServedRun, c: ConsoleControl, at: number): string {
  const change: ControlChange =
    c.action === 'pause'
      ? { paused: true }
      : c.action === 'unpause'
        ? { paused: false }
        : c.action === 'stop'
          ? { stop: true }
          : { concurrency: c.value };
  const result = applyControl(run.file, { ...change, via: 'console' }, at, run.plan);
  if (result.stop) return describeStop(result.stop);
  const { via: _via, ...asked } = change;
  const said = describeChange(asked, result.before, {
    ...result.control,
    planConcurrency: result.planConcurrency,
    planAuto: result.planAuto,
  });
  const r = result.runner;
  const who =
    r && r.alive !== false
      ? `the run (pid ${r.pid}) applies it within one poll interval`
      : 'no run is going: it applies when `run` continues this checkpoint';
  return `${said}; ${who}`;
}

/** Whether `host` is this machine's loopback only (no warning needed). */
export function loopbackOnly(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

async function servedRuns(opts: ServeOptions, ctx: CommandContext): Promise<ServedRun[]> {
  const runs: ServedRun[] = [];
  for (const plan of opts.plans) {
    const file = await statusCheckpoint({ plan }, ctx);
    runs.push(servedRun(file, resolve(ctx.cwd, plan), await readPlanGiven(plan, ctx)));
  }
  for (const state of opts.state ?? []) runs.push(servedRun(resolve(ctx.cwd, state), null, null));
  if (opts.stateDir !== undefined) {
    const dir = resolve(ctx.cwd, opts.stateDir);
    const { files, skipped } = checkpointsUnder(dir);
    for (const s of skipped) ctx.stderr.write(`note: cannot read ${s}\n`);
    if (files.length === 0 && skipped.length > 0)
      throw new ArgsError(`serve: --state-dir ${opts.stateDir}: cannot be read`);
    for (const f of files) runs.push(servedRun(f, null, null));
  }
  return uniqueRuns(runs);
}

export async function runServeCommand(opts: ServeOptions, ctx: CommandContext): Promise<number> {
  if (opts.plans.length === 0 && (opts.state ?? []).length === 0 && opts.stateDir === undefined)
    throw new ArgsError('serve: say what to serve: one or more plans, --state FILE, or --state-dir DIR');
  const runs = await servedRuns(opts, ctx);
  const token = newToken();
  let server: Server;
  try {
    server = await startConsole(
      { runs, reader: commandReader(() => clockOf(ctx).now()), token, readOnly: opts.readOnly },
      opts.host,
      opts.port,
    );
  } catch (err) {
    throw new ArgsError(`serve: cannot listen on ${opts.host}:${opts.port}: ${(err as Error).message}`);
  }
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  const shown = isIP(opts.host) === 6 ? `[${opts.host}]` : opts.host;
  const what = runs.length === 1 ? '1 run' : `${runs.length} runs`;
  ctx.stderr.write(`the console serves ${what}${opts.readOnly ? ', read-only (no control)' : ''}; Ctrl-C ends it\n`);
  if (!loopbackOnly(opts.host))
    ctx.stderr.write(
      `warning: --host ${opts.host} lets other machines reach the console (the token is all that guards it, over plain HTTP); prefer an SSH tunnel or a reverse proxy with TLS (docs/operations.md)\n`,
    );
  // The one place the token is ever shown: this line, to whoever started the console.
  ctx.stdout.write(`http://${shown}:${port}/?token=${token}\n`);
  await new Promise<void>((done) => {
    if (ctx.signal.aborted) return done();
    ctx.signal.addEventListener('abort', () => done(), { once: true });
  });
  await new Promise<void>((done) => {
    server.close(() => done());
    server.closeAllConnections();
  });
  return EXIT.ok;
}
