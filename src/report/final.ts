/**
 * The report printed when a run ends (or is found already ended): steps, counts per kind,
 * quarantined items with reasons, verification, previous and new weights, warnings; in a dry run,
 * the estimate and "nothing was changed". Pure text from data.
 */
import { unreachableLines } from './unreachable-lines.js';
import { INSTANCE_OUTAGE } from '../api/errors.js';
import { shellWord } from '../shared/shell-word.js';
import type { FinalState, StopRequest } from '../events/vocabulary.js';
import { stopAskedBy } from '../events/hold.js';
import type { Schedule } from '../time/windows.js';
import { formatWindowTime, upcomingWindows } from '../time/windows.js';
import type { ContentVerifyOutput, RunContext } from '../machine/types.js';
import { isPerSite } from './geo-output.js';
import type { StoredGeoOutput } from './geo-output.js';
import type { StatusSummary } from '../store/types.js';
import { estimateDuration } from './estimate.js';
import type { EstimateInput } from './estimate.js';
import { countItems, listOutcome, partialOutcome, skippedWords, stayingWhy, stayingWords } from './counts.js';
import type { SourceProgress } from './counts.js';
import type { RunCounts } from './counts.js';
import { describeFailure } from '../events/failure-class.js';
import { formatBytes, formatApproxDuration, placementLines } from './summary.js';
import { copiesLines, copiesOf } from './copies.js';
import type { CopyKnowledge, LiveCopy } from './copies.js';
import { DEFAULT_WIDTH, fitText, headThenWrapped } from './wrap.js';
import { sampleWords } from '../plan/verify-field.js';
import { leftSelectionLines } from './left-selection.js';
import type { MigrationSpan } from './span.js';
import { STAYS_SHOWN, notInTheList, staysLines, verificationVerdict } from './stays.js';
import type { LeftSelectionItem } from './left-selection.js';
import { networkLines } from './networks.js';
import type { NetworksView } from './networks.js';

export interface FinalReportInput {
  /** The machine's final state value. */
  state: FinalState;
  context: RunContext;
  summary: StatusSummary;
  elapsedMs: number;
  /** The whole migration, every process of it (./span.ts); absent: this process is all that is known. */
  span?: MigrationSpan;
  /** Dry run only: what is known about the sizes of the items that would move (see ./estimate.ts). */
  estimate?: Omit<EstimateInput, 'items'>;
  logFile?: string;
  checkpointFile?: string;
  /** The checkpoint is removed when the command ends (the demo): no command can read it afterwards. */
  checkpointTemporary?: boolean;
  /** A revert's report: the forward run's checkpoint it moved items back for (no revert of a revert is offered). */
  revertOf?: string;
  /** The command that runs this again (`shardmove run PLAN ...`, a revert's `shardmove revert PLAN ...`), named in the hints. */
  again?: string;
  /** The plan file as the operator named it, for the commands the report prints (`PLAN` when not known). */
  plan?: string;
  /** Warnings the runtime raised while running (e.g. the token expiring before the estimated end). */
  extraWarnings?: string[];
  /** What the end of the run learnt of where items with copies left behind live (./copies.ts). */
  copies?: CopyKnowledge;
  /** A revert's report: copies the forward run left that the revert made live again by moving items back onto them. */
  madeLive?: LiveCopy[];
  /** Dry run with maintenance windows: the windows and the moment the report is made. */
  schedule?: { schedule: Schedule; now: number } | null;
  /** `run --only FILE`: the reviewed list the run applied, as it was named (null: the run listed its sources). */
  givenList?: string | null;
  /** Items move.select no longer chose when their move was due (./left-selection.ts). */
  leftSelection?: { items: LeftSelectionItem[]; total: number };
  /** The fork networks on the sources (./networks.ts). */
  networks?: NetworksView;
  /** The columns the lines wrap at (80 when not given; the CLI passes the terminal's). */
  width?: number;
  /**
   * Under `move.concurrency: auto`: the limiter's changes of the cap in force, oldest first, each
   * with its reason (without the `auto: ` prefix); absent or empty: none to say.
   */
  autoCaps?: { at: number; cap: number; reason: string }[];
  /** Takes the secrets out (the run's scrubber), before the lines are wrapped: a secret with a space is never split across two. */
  scrub?: (text: string) => string;
}

const REVERT_HEADLINE: Record<FinalState, string> = {
  done: 'REVERTED: every item the run moved is back where it came from, verified',
  doneWithQuarantine: 'REVERTED WITH QUARANTINED ITEMS: everything else is back where it came from, verified',
  failed: 'REVERT FAILED',
};

/**
 * What happened, in one line: a partial drain says how many of the items it knows it moved and
 * where its bound stopped it, never "every repository", nor does the run of a reviewed list; a run that did not verify does not say "verified".
 */
function headline(input: FinalReportInput, counts: RunCounts): string {
  const c = input.context;
  if (c.dryRun && input.state !== 'failed' && (c.wouldRefuse ?? []).length > 0)
    return `DRY RUN COMPLETE, BUT A REAL RUN WOULD BE REFUSED (${c.wouldRefuse!.length} reason${c.wouldRefuse!.length === 1 ? '' : 's'} below): nothing was changed on the instance`;
  if (c.dryRun)
    return `DRY RUN ${input.state === 'failed' ? 'FAILED' : 'COMPLETE'}: nothing was changed on the instance`;
  const out = input.leftSelection?.total ?? 0;
  // An item that left the selection since the forward run is not moved back: "every" would be false.
  if (input.revertOf && out > 0 && input.state !== 'failed')
    return `REVERTED EXCEPT ${out} THAT LEFT THE SELECTION: everything else the run moved is back where it came from, verified`;
  const notListed = input.revertOf ? notInTheList(c.verification) : 0;
  if (notListed > 0 && input.state !== 'failed')
    return `REVERTED${input.state === 'doneWithQuarantine' ? ' WITH QUARANTINED ITEMS' : ''} EXCEPT ${notListed} NOT IN THE LIST: ${notListed} item(s) stay on the destination; everything else the revert took is back where it came from, verified`;
  if (input.revertOf) return REVERT_HEADLINE[input.state];
  const partial = partialOutcome(counts);
  const how = c.verify ? ' and verified' : ', not verified (plan: verify false)';
  if (input.state === 'done' && input.givenList)
    return `DONE: ${listOutcome(input.givenList, input.summary.counts)}${how}`;
  if (input.state === 'done') return partial ? `DONE: ${partial}` : `DONE: every repository moved${how}`;
  if (input.state === 'doneWithQuarantine' && input.givenList)
    return (
      `DONE WITH QUARANTINED ITEMS: ${counts.quarantined} of the ${counts.total} items of the list ${input.givenList} quarantined, ` +
      `${counts.done - counts.skipped} moved${counts.skipped > 0 ? `, ${skippedWords(counts)}` : ''}${how}`
    );
  if (input.state === 'doneWithQuarantine')
    return partial
      ? `DONE WITH QUARANTINED ITEMS: ${partial}; ${counts.quarantined} quarantined`
      : `DONE WITH QUARANTINED ITEMS: everything else moved${how}`;
  return 'FAILED';
}

/** The left-behind copies listed in full in the final summary; beyond that, where the full list is. */
const FEW_COPIES = 3;

/** How to put the weights back, with the checkpoint that holds them; nothing to run after a temporary one. */
function wayBack(input: FinalReportInput): string {
  if (input.checkpointTemporary)
    return '  (the checkpoint is temporary and removed now: keep one with --state FILE to be able to restore the weights later)';
  const back = `  (to put the "before" values back: ${commandOn('weights restore', input)})`;
  if (input.revertOf) return back;
  return `${back}\n  (to move every item this run moved back where it came from, these weights first: ${commandOn('revert', input)})`;
}

/**
 * `shardmove VERB PLAN --state CHECKPOINT` on this run's checkpoint, pasteable: the plan as the
 * operator named it (`PLAN` where the report does not know it, as in the demo's).
 */
function commandOn(verb: string, input: { plan?: string | undefined; checkpointFile?: string | undefined }): string {
  const plan = input.plan !== undefined ? shellWord(input.plan) : 'PLAN';
  return `shardmove ${verb} ${plan}${input.checkpointFile ? ` --state ${shellWord(input.checkpointFile)}` : ''}`;
}

/** The Geo resync's lines (when it ran) and the weights before and now, as the final report says them. */
export function geoAndWeightsLines(c: {
  geo: StoredGeoOutput | null;
  previousWeights: Record<string, number> | null;
  newWeights: Record<string, number> | null;
}): string[] {
  return [
    ...(c.geo ? geoLines(c.geo) : []),
    '',
    `Weights before: ${weights(c.previousWeights)}`,
    `Weights now:    ${weights(c.newWeights)}`,
  ];
}

function weights(w: Record<string, number> | null): string {
  if (!w) return 'unknown';
  return (
    Object.entries(w)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ') || '(none)'
  );
}

/**
 * Every command the reports print, for the wrapper to keep whole: an operator pastes them, so a
 * line never breaks inside one (and `--state FILE`, said in words, stays together too).
 */
function commandsOf(input: {
  again?: string | undefined;
  plan?: string | undefined;
  checkpointFile?: string | undefined;
  checkpointTemporary?: boolean | undefined;
}): string[] {
  const status = commandOn('status', input);
  return [
    ...(input.again ? [`${input.again} --retry-quarantined`, input.again] : []),
    ...(networksMore(input) !== undefined ? [networksMore(input)!] : []),
    `${status} --json`,
    status,
    `${commandOn('report', input)} --html FILE`,
    commandOn('weights restore', input),
    commandOn('revert', input),
    '--state FILE',
  ];
}

/** A report's text scrubbed of secrets, then wrapped (in that order: wrapping could split a secret with a space). */
function fitReport(
  text: string,
  input: Parameters<typeof commandsOf>[0] & { width?: number | undefined; scrub?: ((t: string) => string) | undefined },
): string {
  const clean = input.scrub ? input.scrub(text) : text;
  return fitText(clean, { width: input.width ?? DEFAULT_WIDTH, whole: commandsOf(input) });
}

/** Where the networks a summary leaves out are listed: the status of this checkpoint, as JSON. */
function networksMore(
  input: Pick<FinalReportInput, 'checkpointFile' | 'checkpointTemporary' | 'plan'>,
): string | undefined {
  if (!input.checkpointFile || input.checkpointTemporary) return undefined;
  return `shardmove status ${shellWord(input.plan ?? 'PLAN')} --state ${shellWord(input.checkpointFile)} --json --items`;
}

/**
 * The final report as text, every line within `input.width` columns (80 by default) but for a word
 * longer than that (a hashed path): wrapped by the one wrapper (./wrap.ts), commands kept whole.
 */
export function renderFinalReport(input: FinalReportInput): string {
  const { context: c, summary } = input;
  const lines: string[] = [];
  const dry = c.dryRun;
  const counts = countItems(summary);
  lines.push(headline(input, counts));
  if (c.error) lines.push(`  step: ${c.error.step}`, `  cause: ${c.error.message} (${c.error.code})`);
  const took = tookWords(input);
  took[took.length - 1] += c.instanceVersion ? `, instance version ${c.instanceVersion}` : '';
  lines.push(...took.map((t) => `  ${t}`));

  if (dry) {
    const refused = c.wouldRefuse ?? [];
    if (refused.length > 0 && input.state !== 'failed')
      lines.push('', 'A real run would be refused:', ...refused.map((r) => `  - ${r}`));
    lines.push('', 'Would move:', ...wouldMove(input, counts));
    lines.push(...unreachableLines(c.drains, true));
    lines.push(`  weights now: ${weights(c.previousWeights)}`, `  weights after: ${weights(c.newWeights)}`);
    lines.push(...placementLines(summary.placement, true));
    if (input.networks) lines.push(...networkLines(input.networks, { moreCommand: networksMore(input) }));
  } else {
    lines.push('', ...repositoryLines(counts));
    lines.push(...leftSelectionLines(input.leftSelection));
    lines.push(...unreachableLines(c.drains, false));
    if (summary.quarantined.length > 0) {
      lines.push('', `Quarantined (${summary.quarantined.length}):`);
      for (const q of summary.quarantined) {
        const d = describeFailure(q.reason, c.instanceVersion);
        lines.push(`  ${q.kind} ${q.id} ${q.name} on ${q.source} after ${q.attempts} attempt(s): ${q.reason}`);
        const remedy = input.revertOf ? d.remedy.replace(/\brun again\b/g, 'run the revert again') : d.remedy;
        lines.push(`    ${d.class}: ${remedy} (${d.doc})`);
      }
      if (input.again) lines.push(`  once fixed: ${input.again} --retry-quarantined`);
    }
    lines.push(...placementLines(summary.placement, c.dryRun));
    if (input.networks) lines.push(...networkLines(input.networks, { moreCommand: networksMore(input) }));
    const copies = copiesOf(summary, { destination: c.destination, ...input.copies });
    lines.push(
      ...copiesLines(
        { left: copies.left, live: [...copies.live, ...(input.madeLive ?? [])] },
        { limit: FEW_COPIES, fullList: fullListOf(input) },
      ),
    );
    if (c.verification) {
      lines.push('', `Verification: ${verificationVerdict(c.verification, c.sources)}`);
      lines.push(
        ...staysLines(
          c.verification.stays,
          STAYS_SHOWN,
          input.checkpointTemporary ? null : `${commandOn('status', input)} --json`,
        ),
      );
      lines.push(...recordsLines(c.verification.perKindAndSource, counts.sources));
      for (const p of c.verification.problems) lines.push(`  ${p}`);
      if (c.verification.content) lines.push(...contentLines(c.verification.content));
    } else if (!c.verify) {
      lines.push('', 'Verification: skipped (plan: verify false)');
    }
    lines.push(...geoAndWeightsLines(c));
    if (c.weightsWritten && c.previousWeights) lines.push(wayBack(input));
  }
  // Room that fits is information, kept apart from the warnings.
  lines.push(...autoCapLines(input.autoCaps ?? []));
  if ((c.notes ?? []).length > 0) lines.push('', 'Room (checked by pre-flight):', ...c.notes!.map((n) => `  ${n}`));
  const warnings = [...c.warnings, ...(input.extraWarnings ?? [])];
  if (warnings.length > 0) {
    lines.push('', `Warnings (${warnings.length}):`);
    for (const w of warnings) lines.push(`  - ${w}`);
  }
  if (input.checkpointFile) lines.push('', `Checkpoint: ${input.checkpointFile}`);
  if (input.logFile) lines.push(`Log: ${input.logFile}`);
  if (input.state === 'failed' && c.error?.code === INSTANCE_OUTAGE)
    // Nothing to fix on this side: the instance has to answer again, and the moves it holds go on.
    lines.push(
      input.again
        ? `Once the instance answers again, run it again: ${input.again} (it follows the moves in flight and resumes from its checkpoint).`
        : 'Once the instance answers again, run the same command again: it follows the moves in flight and resumes from its checkpoint.',
    );
  else if (input.state === 'failed')
    lines.push(
      input.again
        ? `Fix the cause and run it again: ${input.again} (it resumes from its checkpoint).`
        : 'Fix the cause and run the same command again: the run resumes from its checkpoint.',
    );
  return fitReport(`${lines.join('\n')}\n`, input);
}

/** The newest changes of the limiter the final report lists; `shardmove report` lists them all. */
const AUTO_CAPS_SHOWN = 8;

/** The cap timeline of `move.concurrency: auto`: its newest changes with their time (UTC) and reason. */
export function autoCapLines(caps: readonly { at: number; cap: number; reason: string }[]): string[] {
  if (caps.length === 0) return [];
  const shown = caps.slice(-AUTO_CAPS_SHOWN);
  const lines = ['', `Cap chosen by move.concurrency: auto (${caps.length} change${caps.length === 1 ? '' : 's'}):`];
  if (caps.length > shown.length)
    lines.push(`  (${caps.length - shown.length} earlier; shardmove report lists every change)`);
  for (const c of shown) lines.push(`  ${new Date(c.at).toISOString().slice(11, 19)} UTC  cap ${c.cap}: ${c.reason}`);
  return lines;
}

/**
 * How long it took: the whole migration from its first start, with its active time beside the
 * wall time when more than one process ran it, and this process's own share.
 */
export function tookWords(input: Pick<FinalReportInput, 'elapsedMs' | 'span'>): string[] {
  const s = input.span;
  if (!s || s.processes <= 1 || s.startedAt === null) return [`took ${formatApproxDuration(input.elapsedMs)}`];
  const first = new Date(s.startedAt).toISOString().replace(/\.\d+Z$/, 'Z');
  return [
    `took ${formatApproxDuration(s.wallMs)} from the first start at ${first}`,
    `running ${formatApproxDuration(s.activeMs)} of it, in ${s.processes} processes (this one ${formatApproxDuration(input.elapsedMs)})`,
  ];
}

/** The moved, quarantined and unfinished items per kind. */
function repositoryLines(counts: RunCounts): string[] {
  const lines = ['Repositories:'];
  for (const p of counts.kinds) {
    const open = p.waiting + p.inFlight;
    lines.push(
      `  ${p.kind}: ${p.done} moved of ${p.total}, ${p.quarantined} quarantined${open > 0 ? `, ${open} not finished` : ''}` +
        `${p.skipped > 0 ? `, ${skippedWords(p)}` : ''}` +
        `${p.staying > 0 ? `, ${p.staying} left on the source as planned (${stayingWhy(p)})` : ''}`,
    );
  }
  if (counts.kinds.length === 0) lines.push('  (none enumerated)');
  const besides = [stayingWords(counts), skippedWords(counts)].filter((w): w is string => w !== null);
  if (besides.length > 0) lines.push(`  in all: ${counts.done} moved of ${counts.total}; ${besides.join('; ')}`);
  return lines;
}

/** A run stopped on request (`shardmove control --stop`, or the stop file), once nothing was in flight. */
export interface StoppedReportInput {
  /** The request it obeyed: when it was made and by what. */
  stop: StopRequest;
  /** The moves in flight when the run saw it: followed to their end before it stopped. */
  inFlight: number;
  /** The stop file's path (named when it asked). */
  stopFile: string;
  /** The step the run was in; `run` again starts it again. */
  step: string;
  dryRun: boolean;
  summary: StatusSummary;
  elapsedMs: number;
  /** The whole migration's span: `took` counts from its first start, as the final report's does. */
  span?: MigrationSpan;
  checkpointFile?: string;
  logFile?: string;
  /** What is left to do after the stop (a stop file that could not be removed). */
  notes: string[];
  /** Writes to the instance the step in flight had sent before the stop came, in words. */
  late?: string[];
  /** The command that continues the run (`shardmove run PLAN ...`, a revert's `shardmove revert ...`). */
  again?: string;
  /** The plan file as the operator named it, for the commands the report prints (`PLAN` when not known). */
  plan?: string;
  /** The columns the lines wrap at (80 when not given). */
  width?: number;
  /** Takes the secrets out, before the lines are wrapped. */
  scrub?: (text: string) => string;
}

/**
 * The report of a run stopped on request: what asked, where it stopped, the counts, and the
 * command that continues it. Nothing new started after the stop and the moves in flight ended first.
 */
export function renderStoppedReport(input: StoppedReportInput): string {
  const by = stopAskedBy(input.stop.by);
  const lines = [
    input.dryRun
      ? `DRY RUN STOPPED on request (${by}): nothing was changed on the instance`
      : `STOPPED on request (${by}): ${input.inFlight > 0 ? `${input.inFlight} move(s) in flight ended first` : 'nothing was in flight'}`,
    `  step: ${input.step} (stop asked for at ${new Date(input.stop.at).toISOString()})`,
    ...tookWords(input).map((t) => `  ${t}`),
  ];
  if (!input.dryRun) {
    const counts = countItems(input.summary);
    lines.push('', ...repositoryLines(counts));
    if (counts.quarantined > 0) lines.push(`  the quarantined items are listed by: ${commandOn('status', input)}`);
  }
  if (input.late && input.late.length > 0)
    lines.push('', 'Sent before the stop came:', ...input.late.map((w) => `  - ${w}`));
  if (input.notes.length > 0)
    lines.push('', `Warnings (${input.notes.length}):`, ...input.notes.map((n) => `  - ${n}`));
  else if (input.stop.by === 'file') lines.push('', `The stop file was removed: ${input.stopFile}`);
  if (input.checkpointFile) lines.push('', `Checkpoint: ${input.checkpointFile}`);
  if (input.logFile) lines.push(`Log: ${input.logFile}`);
  lines.push(`To continue from here: ${input.again ?? 'run the same command again'}`);
  return fitReport(`${lines.join('\n')}\n`, input);
}

/**
 * A dry run's "Would move" lines: per kind and source what the run would move and what would stay
 * (the count), the estimate for that scope; nothing estimated when the dry run failed before it knew
 * what would move.
 */
function wouldMove(input: FinalReportInput, counts: RunCounts): string[] {
  const { context: c } = input;
  const lines: string[] = [];
  const drains = Object.values(c.drains);
  for (const d of drains) {
    if (d.byRecords) {
      lines.push(
        `  ${d.kind} on ${d.source}: unknown number, by one bulk move (the instance does not expose their storage; verified by move records)`,
      );
      continue;
    }
    const s = counts.sources.find((x) => x.kind === d.kind && x.source === d.source);
    const moving = s ? s.waiting + s.inFlight : 0;
    lines.push(
      `  ${d.kind} on ${d.source}: ${s && s.staying > 0 ? `${moving} of ${s.total} (${s.staying} stay: ${stayingWhy(s)})` : moving}`,
    );
  }
  if (drains.length === 0 && input.state !== 'failed')
    for (const p of counts.kinds) lines.push(`  ${p.kind}: ${p.waiting + p.inFlight}`);
  const stay = stayingWords(counts);
  if (stay) lines.push(`  in all: ${counts.remaining} of ${counts.total} items; ${stay}`);
  if (input.state === 'failed') {
    const step = c.error?.step ?? 'a step';
    lines.push(
      drains.length === 0
        ? `  not known, and no estimate: the dry run stopped at ${step}, before it listed the items`
        : `  no estimate: the dry run stopped at ${step}, before it knew everything that would move`,
    );
    return lines;
  }
  if (input.estimate) {
    const e = input.estimate;
    const total = counts.remaining;
    lines.push(`  known size: ${formatBytes(e.bytes)} in ${e.sized} of ${total} items`);
    const est = estimateDuration({ ...e, items: total });
    lines.push(
      `  estimated duration: ${formatApproxDuration(est.ms)} at ${e.concurrency} moves in flight`,
      `    (${est.assumptions})`,
    );
    if (e.capAssumed) lines.push(`    (${e.capAssumed})`);
    if (input.schedule) lines.push(...windowFit(input.schedule.schedule, input.schedule.now, est.ms));
  }
  return lines;
}

/** Where the whole list of left-behind copies is, for a summary that shows only a few. */
function fullListOf(input: FinalReportInput): string[] {
  if (input.checkpointTemporary) return ['the checkpoint is temporary: keep one with --state FILE to list them all'];
  return [
    'every one, with its paths on the storage, in:',
    `  ${commandOn('status', input)} --json   (orphans)`,
    `  ${commandOn('report', input)} --html FILE`,
  ];
}

/** Whether the estimated work fits the maintenance windows, and in how many. */
export function windowFit(schedule: Schedule, now: number, workMs: number): string[] {
  const fmt = (ms: number) => formatWindowTime(ms, schedule.timezone);
  let left = workMs;
  const windows = upcomingWindows(schedule, now, 60);
  for (const [i, w] of windows.entries()) {
    const length = (w.closes ?? Number.POSITIVE_INFINITY) - w.opens;
    if (left <= length) {
      const end = w.opens + left;
      const first = windows[0]!;
      return [
        `  maintenance windows: the work fits in ${i + 1} window(s), from ${fmt(first.opens)} to about ${fmt(end)}`,
        ...(i === 0
          ? []
          : [
              `    (the first window, ${fmt(first.opens)} to ${fmt(first.closes ?? first.opens)}, is too short for all of it)`,
            ]),
      ];
    }
    left -= length;
  }
  return [
    `  maintenance windows: the work does NOT fit in the next ${windows.length} windows (${formatApproxDuration(left)} left over); widen the windows or raise move.concurrency`,
  ];
}

/** Entries verified by move records, said plainly: no listing proved them. */
function recordsLines(perKindAndSource: unknown, sources: readonly SourceProgress[]): string[] {
  if (!Array.isArray(perKindAndSource)) return [];
  const out: string[] = [];
  for (const raw of perKindAndSource as {
    by?: string;
    kind?: string;
    source?: string;
    moved?: number;
    quarantined?: number;
    kept?: number;
  }[]) {
    if (raw?.kept) {
      // Why they stay, from the count of that source: a reached bound, or not selected (move.select).
      const s = sources.find((x) => x.kind === raw.kind && x.source === raw.source);
      const why = s && s.notSelected > 0 ? stayingWhy(s) : 'move.until reached';
      out.push(
        `  ${raw.kind} on ${raw.source}: ${raw.kept} still there, as planned (${why}); everything scheduled left it`,
      );
    }
    if (raw?.by !== 'records') continue;
    out.push(
      `  ${raw.kind} on ${raw.source}: verified by move records, not by a listing, because the instance does not expose the storage of ${raw.kind} ` +
        `(${raw.moved ?? 0} moved, ${raw.quarantined ?? 0} quarantined)`,
    );
  }
  return out;
}

/**
 * The Geo step per secondary site. A checkpoint written before per-site resync holds `{ results }`
 * from one call to the primary instead of `sites`: it is shown as that, not as a per-site outcome.
 */
function geoLines(geo: StoredGeoOutput): string[] {
  if (!isPerSite(geo)) {
    return [
      `Geo resync requested from the primary only for ${(geo.results ?? []).map((r) => r.registryClass).join(', ')} (before per-site resync)`,
    ];
  }
  const lines = ['', 'Geo resync:'];
  if (geo.sites.length === 0) lines.push('  nothing requested: no Geo secondary');
  for (const s of geo.sites) {
    const site = `"${s.name}" (site ${s.siteId})`;
    if (s.error !== null) {
      lines.push(`  ${site}: FAILED: ${s.error}`);
      continue;
    }
    const refused = s.results.filter((r) => r.errors.length > 0);
    const accepted = s.results.filter((r) => r.errors.length === 0).map((r) => r.registryClass);
    if (accepted.length === 0) lines.push(`  ${site}: requested for nothing`);
    else lines.push(...headThenWrapped('  ', `${site}: requested for`, accepted.join(', ')));
    for (const r of refused) lines.push(`    refused ${r.registryClass}: ${r.errors.join('; ')}`);
  }
  return lines;
}

/** The content check's lines under Verification (plan `verify.content`): the counts, then who was not compared. */
function contentLines(o: ContentVerifyOutput): string[] {
  const share = sampleWords(o.fraction, true);
  const head = `Content of ${share}: ${o.sampled} compared before and after their moves: ${o.equal} equal, ${o.differ} different, ${o.notCompared} not compared`;
  const lines = [`  ${head}`];
  for (const u of o.unchecked) lines.push(`    not compared: projects ${u.id} (${u.name}): ${u.why}`);
  if (o.notCompared > o.unchecked.length) lines.push(`    and ${o.notCompared - o.unchecked.length} more not compared`);
  return lines;
}
