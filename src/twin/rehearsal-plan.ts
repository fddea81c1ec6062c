/**
 * The twin's rehearsal plan (pure but for the plan check): a copy of the plan that can reach only
 * the twin. A plan names its instance in many ways (a literal `url:`, a `token_file:`, OAuth files,
 * `${VAR}`s of any name), so no set of variables given on a command line is sure to point an
 * unchanged plan elsewhere: following such a command once drained production. The copy takes its
 * URL and token from two variables of its own, which no production shell sets, and loses what
 * would still reach production (its Prometheus, the rules and room read there, its notification
 * targets); its checkpoint is its own, beside it.
 */
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { isMap, isNode, isSeq, parseDocument } from 'yaml';
import type { Document } from 'yaml';
import { PlanError } from '../plan/errors.js';
import { parsePlanText } from '../plan/load.js';
import { TWIN_ADMIN_TOKEN } from './seed-text.js';

/** The variable the rehearsal plan reads its instance URL from: the twin sandbox's address. */
export const TWIN_URL_VAR = 'SHARDMOVE_TWIN_URL';
/** The variable the rehearsal plan reads its token from: the twin's sandbox-only admin token. */
export const TWIN_TOKEN_VAR = 'SHARDMOVE_TWIN_TOKEN';
/** A URL the rehearsal plan is checked with (the twin itself listens on a free port, ./urlFileFor). */
export const TWIN_URL = 'http://127.0.0.1:8081';

/** The rehearsal plan beside a seed: `twin.yaml` -> `twin.plan.yaml`. */
export function rehearsalPlanFor(out: string): string {
  return `${out.replace(/\.ya?ml$/i, '')}.plan.yaml`;
}

/**
 * Where the printed sandbox command (`--port 0 --url-file`) writes the URL the twin listens on,
 * for the printed run to read: beside the seed, `twin.yaml` -> `twin.url`.
 */
export function urlFileFor(out: string): string {
  return `${out.replace(/\.ya?ml$/i, '')}.url`;
}

export interface RehearsalPlan {
  text: string;
  /** The plan's sections left out, each with why (they would reach production). */
  removed: string[];
  /** The rehearsal's checkpoint, as its `checkpoint:` field writes it (relative to the rehearsal plan). */
  checkpoint: string;
}

/** Sections dropped from the rehearsal, and why. */
const DROPPED: Array<{ path: string[]; why: string }> = [
  { path: ['prometheus'], why: "production's Prometheus" },
  { path: ['throttle', 'rules'], why: "rules on production's Prometheus" },
  { path: ['notify'], why: "production's notification targets and hooks" },
  { path: ['instance', 'sudo'], why: 'the twin has one user, twin-admin' },
];

/**
 * The rehearsal plan for `planText` (the plan file `planFile`, absolute), to be written at
 * `file`; or why there is none, when the copy would not load (a `move.until.free` that needs the
 * room section left out, say): the caller then writes and prints no rehearsal, and says why.
 */
export function renderRehearsalPlan(
  planText: string,
  opts: { planFile: string; planName: string; file: string; env: Readonly<Record<string, string | undefined>> },
): RehearsalPlan | { problem: string } {
  const doc = parseDocument(planText);
  if (doc.errors.length > 0 || !isMap(doc.contents)) return { problem: `${opts.planFile} is not a plan mapping` };
  const removed: string[] = [];
  for (const d of DROPPED) {
    if (!doc.hasIn(d.path)) continue;
    // `sudo: null`, `notify: []`: nothing to leave out, and nothing to say.
    const was: unknown = doc.getIn(d.path);
    doc.deleteIn(d.path);
    if (was !== null && !(isSeq(was) && was.items.length === 0)) removed.push(`${d.path.join('.')} (${d.why})`);
  }
  // Room read from production's Prometheus cannot be read without it; a literal size stays.
  if (removed.some((r) => r.startsWith('prometheus ')) && doc.hasIn(['capacity'])) {
    doc.deleteIn(['capacity']);
    removed.push("capacity (read from production's Prometheus)");
  }
  for (const key of ['url', 'token', 'token_file', 'oauth']) doc.deleteIn(['instance', key]);
  const instance = doc.getIn(['instance']);
  if (!isMap(instance)) doc.set('instance', doc.createNode({}));
  doc.setIn(['instance', 'url'], `\${${TWIN_URL_VAR}}`);
  doc.setIn(['instance', 'token'], `\${${TWIN_TOKEN_VAR}}`);
  const checkpoint = `state/${opts.planName}.twin.db`;
  doc.set('checkpoint', checkpoint);
  // Relative to the plan's folder: the rehearsal plan is elsewhere, the list is the same.
  const here = dirname(opts.file);
  const list = doc.getIn(['move', 'select', 'file']);
  if (typeof list === 'string' && !isAbsolute(list) && !list.includes('${'))
    doc.setIn(['move', 'select', 'file'], relative(here, resolve(dirname(opts.planFile), list)));
  header(doc, relative(here, opts.planFile), removed);
  const text = doc.toString();
  // Checked as the rehearsal will read it; secrets are not resolved (the twin's token is public, but
  // a resolved secret is scrubbed from this process's output, and the printed command names it).
  try {
    parsePlanText(text, opts.file, {
      env: { ...opts.env, [TWIN_URL_VAR]: TWIN_URL, [TWIN_TOKEN_VAR]: TWIN_ADMIN_TOKEN },
      baseDir: dirname(opts.file),
      resolveSecrets: false,
    });
  } catch (err) {
    if (!(err instanceof PlanError)) throw err;
    return { problem: err.message };
  }
  return { text, removed, checkpoint };
}

function header(doc: Document, planFile: string, removed: string[]): void {
  const lines = [
    ` Rehearsal of ${planFile.replace(/[\r\n]/g, ' ')} (from this folder) on its twin, written by shardmove twin.`,
    ` The instance is \${${TWIN_URL_VAR}} with the token \${${TWIN_TOKEN_VAR}}, and nothing else:`,
    ' set both for the run (the twin sandbox and its admin token); unset, this plan does not load.',
    ` Its checkpoint is its own (checkpoint: below), never the plan's.`,
    ...(removed.length > 0
      ? [' Left out, since they would reach production:', ...removed.map((r) => `   - ${r}`)]
      : []),
  ];
  // The plan's own top comment is not kept: it may say how to run the plan, against production.
  doc.commentBefore = lines.join('\n');
  if (isMap(doc.contents)) {
    doc.contents.commentBefore = null;
    const first = doc.contents.items[0]?.key;
    if (isNode(first)) first.commentBefore = null;
  }
}
