/**
 * The progress line of every command that drives a drain (`run`, `revert`, `demo`): pure. It is
 * built as parts in order of importance, so that a narrow terminal loses the least important ones
 * first (the per-kind counts, the elapsed time, then the step's label; the counts with the moves in
 * flight, a hold's reason and the ETA stay longest) and never sees a number cut in half; colours
 * only when the caller says the output is a terminal that wants them. Drawing it (a terminal line
 * redrawn in place, or a line every few seconds in a file or pipe) is ../cli/progress-observer.ts's
 * business.
 */
import type { StatusSummary } from '../store/types.js';
import { escapeControls } from './escape.js';
import type { AutoCapView, Hold } from '../events/hold.js';
import { etaOf } from './pace.js';
import { formatApproxDuration, progressByKind } from './summary.js';
import { stepWords } from './step-words.js';

export interface ProgressView {
  /** e.g. "drain nfs-1/projects". */
  step: string;
  summary: Pick<StatusSummary, 'counts' | 'retrying' | 'staying' | 'boundsReached'>;
  /** Time this process has driven the run. */
  elapsedMs: number;
  /** What holds the run back now (./hold.ts); null: it goes at the plan's cap. */
  hold: Hold | null;
  /** Moves per minute measured in this process; null until enough moves ended here to tell. */
  perMinute: number | null;
  /** The process was told to stop (Ctrl-C): the step in flight returns, then the checkpoint is saved. */
  stopping?: boolean;
  /** Under `move.concurrency: auto` with nothing holding the run: the limiter's cap and its last reason. */
  auto?: AutoCapView | null;
}

/** How a part is shown on a terminal with colours. */
export type Tone = 'alarm' | 'warn' | 'note' | 'dim' | 'strong';

interface Piece {
  text: string;
  tone?: Tone | undefined;
}

/** One part of the line: what goes before it when another part precedes it, and its forms, longest first. */
interface Part {
  key: PartKey;
  join: string;
  forms: Piece[][];
}

type PartKey = 'elapsed' | 'step' | 'hold' | 'why' | 'counts' | 'pace' | 'kinds';

/**
 * What a narrow line gives up, in order: each step takes one part to its next shorter form (or
 * leaves it out). The per-kind counts and the elapsed time go first, then the step's label before
 * what an operator reads the line for at 3 a.m.: the counts with the moves in flight, what holds the
 * run and why, and the ETA. At 80 columns the label is what gives way, not the moves in flight or
 * a hold's reason.
 */
const SHRINK: readonly [PartKey, number | 'out'][] = [
  ['kinds', 'out'],
  ['elapsed', 'out'],
  ['step', 1],
  ['counts', 1],
  ['pace', 1],
  ['hold', 1],
  ['why', 1],
  ['step', 'out'],
  ['counts', 2],
  ['pace', 2],
  ['counts', 3],
  ['why', 'out'],
  ['counts', 4],
];

/** Moves per minute as people read them: whole numbers, one decimal below 10. */
export function formatRate(perMinute: number): string {
  return perMinute >= 10 ? String(Math.round(perMinute)) : String(Math.round(perMinute * 10) / 10);
}

/** The parts of the line, in the order they appear. */
function partsOf(view: ProgressView): Part[] {
  const parts: Part[] = [];
  const add = (key: PartKey, join: string, ...forms: Piece[][]) => parts.push({ key, join, forms });
  add('elapsed', ' ', [{ text: `[${formatApproxDuration(view.elapsedMs)}]`, tone: 'dim' }]);
  const step = stepWords(oneLine(view.step));
  add('step', ' ', [{ text: step.full }], ...(step.short ? [[{ text: step.short }]] : []));
  const h = view.hold;
  if (view.stopping) {
    add(
      'hold',
      ' | ',
      [{ text: 'STOPPING: the step in flight returns, then the checkpoint is saved', tone: 'warn' }],
      [{ text: 'STOPPING', tone: 'warn' }],
    );
  } else if (h) {
    const tone: Tone = h.tone;
    add('hold', ' | ', [{ text: oneLine(h.full), tone }], [{ text: oneLine(h.short), tone }]);
    if (h.detail) {
      const brief = oneLine(h.brief ?? h.detail.replace(/ \{[^}]*\}/g, ''));
      add('why', ': ', [{ text: oneLine(h.detail) }], [{ text: brief }]);
    }
  } else if (view.auto) {
    // The limiter's cap is no hold, but the operator of an auto plan asks "how many now, and why".
    const a = view.auto;
    add('hold', ' | ', [{ text: `cap ${a.cap} (auto)`, tone: 'note' }], [{ text: `cap ${a.cap}`, tone: 'note' }]);
    add('why', ': ', [{ text: oneLine(a.reason) }], [{ text: oneLine(a.reason.replace(/[;(].*$/, '').trim()) }]);
  }
  const kinds = progressByKind(view.summary);
  const sum = (f: (k: (typeof kinds)[number]) => number) => kinds.reduce((a, k) => a + f(k), 0);
  const total = sum((k) => k.total);
  if (total > 0) {
    const done: Piece = { text: `${sum((k) => k.done)}/${total} done`, tone: 'strong' };
    const inFlight = sum((k) => k.inFlight);
    const retrying = sum((k) => k.retrying);
    const quarantined = sum((k) => k.quarantined);
    const staying = sum((k) => k.staying);
    const skipped = sum((k) => k.skipped);
    const extra = {
      inFlight: inFlight > 0 ? [{ text: `, ${inFlight} in flight` }] : [],
      retrying: retrying > 0 ? [{ text: `, ${retrying} retrying`, tone: 'warn' as const }] : [],
      quarantined: quarantined > 0 ? [{ text: `, ${quarantined} quarantined`, tone: 'alarm' as const }] : [],
      // Left on the source as planned (move.until): not work left, and said so.
      staying: staying > 0 ? [{ text: `, ${staying} staying`, tone: 'dim' as const }] : [],
      // A reviewed list's items no longer where it says: neither done nor work left.
      skipped: skipped > 0 ? [{ text: `, ${skipped} not moved`, tone: 'dim' as const }] : [],
    };
    add(
      'counts',
      ' | ',
      [done, ...extra.inFlight, ...extra.retrying, ...extra.quarantined, ...extra.staying, ...extra.skipped],
      [done, ...extra.inFlight, ...extra.retrying, ...extra.quarantined],
      [done, ...extra.inFlight, ...extra.quarantined],
      [done, ...extra.inFlight],
      [done],
    );
  }
  // Rate and ETA belong to a drain; while it is held, nothing is scheduled and no ETA holds.
  if (view.step.startsWith('drain ') && !view.stopping) {
    const remaining = sum((k) => k.waiting + k.inFlight);
    if (h?.stopped) {
      // Held, "ETA paused" says again what the hold says: the first to give way on a narrow line.
      add('pace', ' | ', [{ text: 'ETA paused', tone: h.tone }], []);
    } else if (view.perMinute === null || view.perMinute <= 0) {
      const measuring = { text: 'ETA measuring', tone: 'dim' as const };
      add('pace', ' | ', [measuring], [measuring], [{ text: 'ETA ?', tone: 'dim' }]);
    } else {
      const rate = formatRate(view.perMinute);
      const eta = { text: `ETA ${formatApproxDuration(etaOf(remaining, view.perMinute, false))}` };
      add('pace', ' | ', [{ text: `${rate} moves/min, ` }, eta], [{ text: `${rate}/min, ` }, eta], [eta]);
    }
  }
  if (kinds.length > 1) {
    add('kinds', ' | ', [{ text: kinds.map((k) => `${k.kind} ${k.done}/${k.total}`).join(', '), tone: 'dim' }]);
  }
  return parts;
}

/**
 * The line that stays on a terminal when the run is paused, held or released (`previous`: the
 * hold's `full` words before, '' when none): the local time, and what holds it now and why.
 */
export function renderHoldNote(view: ProgressView, previous: string, now: number, colour = false): string {
  const time = new Date(now).toTimeString().slice(0, 8);
  const h = view.hold;
  let text: string;
  let tone: Tone | undefined;
  if (view.stopping) {
    text = 'STOPPING: the step in flight returns, then the checkpoint is saved';
    tone = 'warn';
  } else if (h?.stopped) {
    text = `${h.full}${h.detail ? `: ${h.detail}` : ''}`;
    tone = h.tone;
  } else {
    text = `going on: ${released(previous)}`;
  }
  const line = oneLine(text);
  return `${time} ${colour && tone ? `${SGR[tone]}${line}${RESET}` : line}`;
}

/** What ended, from the words the hold had ("HELD by rule disk-busy" -> "no longer held by rule disk-busy"). */
function released(previous: string): string {
  const room = /^HELD: no room on (.*)$/.exec(previous);
  if (room) return `room on ${room[1]} again`;
  if (previous.startsWith('WAITING')) return 'a maintenance window is open';
  return `no longer ${previous.replace(/^(PAUSED|HELD)\b/, (w) => w.toLowerCase())}`;
}

/** Text from the checkpoint on one terminal line: control characters escaped, tabs and newlines as spaces. */
function oneLine(text: string): string {
  return escapeControls(text).replace(/[\t\n]+/g, ' ');
}

/** How wide a text is on a terminal: one column per code point (names are escaped, ASCII mostly). */
export function textWidth(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

/** The pieces shown when each part takes the form `form[key]` (an index past its forms: left out). */
function lay(parts: readonly Part[], form: ReadonlyMap<PartKey, number>): Piece[] {
  const out: Piece[] = [];
  let previous: PartKey | null = null;
  for (const p of parts) {
    const pieces = p.forms[form.get(p.key) ?? 0];
    if (!pieces || pieces.length === 0) continue;
    // The elapsed time is a prefix: whatever follows it (the label, or the hold once the label gave way) after a space.
    if (previous !== null) out.push({ text: previous === 'elapsed' ? ' ' : p.join });
    out.push(...pieces);
    previous = p.key;
  }
  return out;
}

const plain = (pieces: readonly Piece[]) => pieces.map((p) => p.text).join('');

/**
 * The pieces that fit `width` columns: the least important parts given up first (SHRINK), then
 * whatever was given up on the way that fits again after a later cut taken back, most important first.
 */
function fit(parts: readonly Part[], width: number): Piece[] {
  const form = new Map<PartKey, number>();
  const fits = () => textWidth(plain(lay(parts, form))) <= width;
  const taken: { key: PartKey; before: number }[] = [];
  for (const [key, to] of SHRINK) {
    if (fits()) break;
    const part = parts.find((p) => p.key === key);
    if (!part) continue;
    const before = form.get(key) ?? 0;
    const next = to === 'out' ? part.forms.length : Math.min(to, part.forms.length);
    if (next <= before) continue;
    form.set(key, next);
    taken.push({ key, before });
  }
  if (fits()) {
    for (const { key, before } of taken.reverse()) {
      const now = form.get(key) ?? 0;
      form.set(key, before);
      if (!fits()) form.set(key, now);
    }
    return lay(parts, form);
  }
  // Narrower than the essentials: whole words only, then an ellipsis.
  const text = plain(lay(parts, form));
  const cut = text.lastIndexOf(' ', Math.max(0, width - 1));
  return [{ text: `${cut > 0 ? text.slice(0, cut) : ''}…` }];
}

const SGR: Record<Tone, string> = {
  alarm: '\x1b[1;31m',
  warn: '\x1b[33m',
  note: '\x1b[36m',
  dim: '\x1b[2m',
  strong: '\x1b[1m',
};
const RESET = '\x1b[0m';

export interface LineOptions {
  /** Columns available (a terminal's width less one); absent: no limit (files and pipes). */
  width?: number | undefined;
  /** ANSI colours (a terminal that wants them: NO_COLOR unset). */
  colour?: boolean | undefined;
}

/**
 * The progress line: `[elapsed] step | hold: why | done/total, in flight, retrying, quarantined |
 * rate, ETA | per kind` (the step in words, ./step-words.ts), every part present only when it says something. Text from the checkpoint
 * (step, reasons) is escaped here, since the line reaches the terminal as it is (with its colours).
 */
export function renderProgressLine(view: ProgressView, opts: LineOptions = {}): string {
  const parts = partsOf(view);
  const pieces = opts.width === undefined ? lay(parts, new Map()) : fit(parts, opts.width);
  return pieces.map((p) => (opts.colour && p.tone ? `${SGR[p.tone]}${p.text}${RESET}` : p.text)).join('');
}
