/**
 * The report as one self-contained HTML file: the tables and text are rendered here (readable
 * without JavaScript, and when printed), the charts are drawn in the browser by Chart.js, whose UMD
 * bundle is inlined with the report's data and ./client.js. Nothing is loaded over the network, and
 * a Content-Security-Policy says so to the browser as well.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { stayingWhy } from '../counts.js';
import { verificationVerdict } from '../stays.js';
import { revertLines } from '../status.js';
import type { RevertView } from '../status.js';
import { formatApproxDuration, formatBytes } from '../summary.js';
import { escapeControls } from '../escape.js';
import { shellWord } from '../../shared/shell-word.js';
import { copiesHtml } from './copies.js';
import { networksHtml } from './networks.js';
import type { ReportData } from './data.js';
import { isPerSite } from '../geo-output.js';

/** Chart.js's browser bundle; the package exports no path to it, so it is found beside its main file. */
function readChartJs(): string {
  const main = createRequire(import.meta.url).resolve('chart.js');
  return readFileSync(join(dirname(main), 'chart.umd.js'), 'utf8');
}

function readClient(): string {
  return readFileSync(new URL('./client.js', import.meta.url), 'utf8');
}

/**
 * Text for HTML element content and attribute values. Control characters of a name or message from
 * the instance or the plan (ESC, BEL, a bidi override that reorders what a line says) are shown as
 * the terminal shows them, visible `\uXXXX` text (../escape.ts), not passed to the browser raw.
 */
export function escapeHtml(s: string): string {
  return escapeControls(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The report's data for the inlined script: every string's control characters made visible, as in the tables. */
function visibleData(d: ReportData): string {
  return JSON.stringify(d, (_key, value: unknown) => (typeof value === 'string' ? escapeControls(value) : value));
}

/** A script element's content must not close it early. */
function scriptText(code: string): string {
  if (/<\/script/i.test(code)) throw new Error('an inlined script contains </script');
  return code;
}

const time = (ms: number | null) =>
  ms === null
    ? 'unknown'
    : new Date(ms)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC');
const num = (n: number | null, digits = 1) => (n === null ? '–' : Number.isInteger(n) ? String(n) : n.toFixed(digits));

function table(id: string, headers: string[], rows: (string | number)[][], numeric: boolean[] = []): string {
  const th = headers.map((h, i) => `<th${numeric[i] ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('');
  const body = rows
    .map(
      (r) =>
        `<tr>${r.map((v, i) => `<td${numeric[i] ? ' class="num"' : ''}>${escapeHtml(String(v))}</td>`).join('')}</tr>`,
    )
    .join('\n');
  return `<table id="${id}"><thead><tr>${th}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

function section(id: string, title: string, body: string): string {
  return `<section id="${id}"><h2>${escapeHtml(title)}</h2>\n${body}\n</section>`;
}

function outcome(d: ReportData): string {
  const o = d.outcome;
  const rows: [string, string][] = [
    ['State', `${o.state}${o.step ? `, step ${o.step}` : ''}`],
    ['Started', time(o.startedAt)],
    [o.state === 'running' ? 'Last activity' : 'Ended', time(o.lastEventAt)],
    [
      'Took',
      o.startedAt !== null && o.lastEventAt !== null
        ? `${formatApproxDuration(o.lastEventAt - o.startedAt)}${o.processes > 1 ? `, ${formatApproxDuration(o.activeMs)} of it running, in ${o.processes} processes` : ''}`
        : 'unknown',
    ],
    [
      'Items',
      `${o.total} known, ${o.remaining} remaining${o.staying > 0 ? `, ${o.staying} staying on the sources as planned (${stayingWhy(o)})` : ''}`,
    ],
    [
      'Rate',
      `${o.averagePerMinute ?? '–'} moves/min on average; ${o.movesPerMinute} over the last 10 minutes${o.state === 'running' ? `; ETA ${formatApproxDuration(o.etaMs)}` : ''}`,
    ],
    ['Instance version', o.instanceVersion ?? 'unknown'],
  ];
  if (o.error) rows.push(['Failed at', `${o.error.step}: ${o.error.message} (${o.error.code})`]);
  const dl = rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('');
  return `<p class="headline state-${escapeHtml(o.state)}" id="headline">${escapeHtml(o.headline)}</p><dl>${dl}</dl>`;
}

function weights(d: ReportData): string {
  const { before, after, written } = d.weights;
  if (!before && !after) return '<p>Not known: the run did not get as far as the weights.</p>';
  const names = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])].sort();
  const rows = names.map((n) => [n, before?.[n] ?? '–', after?.[n] ?? '–']);
  // Pasted as printed: the plan as the report was asked for it, both paths quoted for a shell.
  const planAndState = `${d.planFile === null ? 'PLAN' : shellWord(d.planFile)} --state ${shellWord(d.checkpoint)}`;
  const note =
    written && before
      ? `<p class="note">To put the "before" values back: <code>${escapeHtml(`shardmove weights restore ${planAndState}`)}</code> (it shows the change and asks first).` +
        (d.revertOf
          ? ''
          : ` To move every item this run moved back where it came from, these weights first: <code>${escapeHtml(`shardmove revert ${planAndState}`)}</code> (it shows what it will do and asks first).`) +
        '</p>'
      : '';
  return table('weights', ['Storage', 'Before', 'After'], rows, [false, true, true]) + note;
}

/** The forward run's revert: when, its state, what went back where, what is still on the destination. */
function revertHtml(v: RevertView): string {
  const lines = revertLines(v).slice(2);
  const head = revertLines(v)[1]!.replace(/^Reverted: /, '');
  return `<p>${escapeHtml(head.charAt(0).toUpperCase() + head.slice(1))}.</p><ul>${lines.map((l) => `<li>${escapeHtml(l.trim())}</li>`).join('')}</ul>`;
}

function verification(d: ReportData): string {
  const v = d.verification;
  if (!v.planned) return '<p>Skipped (plan: <code>verify: false</code>).</p>';
  if (!v.result) return '<p>Not run yet.</p>';
  const problems = v.result.problems.map((p) => `<li>${escapeHtml(p)}</li>`).join('');
  const says = verificationVerdict(v.result, d.verification.sources);
  const stays = v.result.stays;
  const rows = (stays?.items ?? []).map((it) => [it.kind, it.id, it.path, it.source, it.why]);
  const more =
    stays && stays.total > stays.items.length
      ? `<p class="note">The first ${stays.items.length} of ${stays.total} are listed.</p>`
      : '';
  const unlisted = (stays?.unlisted ?? []).map((u) => `<li>not listed: ${escapeHtml(u)}</li>`).join('');
  const listed =
    rows.length > 0
      ? `<h3>Still on the sources (${stays!.total})</h3>${table('staying', ['Kind', 'Id', 'Path', 'Source', 'Why'], rows, [false, true])}${more}`
      : '';
  return (
    `<p id="verification-result" class="${v.result.ok ? 'ok' : 'bad'}">${escapeHtml(says.charAt(0).toUpperCase() + says.slice(1))}.</p>` +
    `${problems || unlisted ? `<ul>${problems}${unlisted}</ul>` : ''}${listed}`
  );
}

function geo(d: ReportData): string {
  const g = d.geo;
  if (!g.planned) return '<p>Not requested (plan: <code>geo.resync: false</code>).</p>';
  if (!g.result) return '<p>Not run yet.</p>';
  if (!isPerSite(g.result))
    return '<p>Resync requested from the primary only (a checkpoint from before per-site resync).</p>';
  const warnings = g.result.warnings.map((w) => `<li>${escapeHtml(w)}</li>`).join('');
  if (g.result.sites.length === 0)
    return `<p>Nothing requested: no Geo secondary.</p>${warnings ? `<ul>${warnings}</ul>` : ''}`;
  const rows = g.result.sites.map((s) => [
    `${s.name} (site ${s.siteId})`,
    s.error ??
      (s.results
        .filter((r) => r.errors.length === 0)
        .map((r) => r.registryClass)
        .join(', ') ||
        'nothing'),
    s.error
      ? ''
      : s.results
          .filter((r) => r.errors.length > 0)
          .map((r) => `${r.registryClass}: ${r.errors.join('; ')}`)
          .join(' / '),
  ]);
  return (
    table('geo-sites', ['Site', 'Resync requested for', 'Refused'], rows) + (warnings ? `<ul>${warnings}</ul>` : '')
  );
}

const CSS = `
:root { --ink: #1d2330; --muted: #5b6475; --line: #d9dde5; --ok: #1a7f37; --bad: #b42318; --warn: #9a6700; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); margin: 0 auto; max-width: 1100px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.meta, .note { color: var(--muted); font-size: 12px; }
.headline { font-size: 18px; font-weight: 600; padding: 8px 12px; border-left: 5px solid var(--muted); background: #f5f6f8; }
.state-done { border-color: var(--ok); } .state-failed { border-color: var(--bad); } .state-doneWithQuarantine, .state-interrupted { border-color: var(--warn); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; } dt { color: var(--muted); } dd { margin: 0; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
td { overflow-wrap: anywhere; } /* hashed paths and long project paths break anywhere rather than widen the page */
th { background: #f5f6f8; } .num { text-align: right; font-variant-numeric: tabular-nums; }
.chart { position: relative; height: 320px; }
.ok { color: var(--ok); font-weight: 600; } .bad { color: var(--bad); font-weight: 600; }
code { font-size: 12px; }
@page { size: A4; margin: 14mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  h2 { break-after: avoid; }
  section, tr, .chart { break-inside: avoid; }
  .chart { height: 260px; width: 100%; }
  .headline, th { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
`;

/** Whether a stuck move's repository is read-only, in a table cell. */
const readOnlyWords = (readOnly: boolean | null) => (readOnly === null ? 'unknown' : readOnly ? 'yes' : 'no');

/** The whole report as one HTML document. */
export function renderHtmlReport(d: ReportData): string {
  const kinds = table(
    'kinds',
    [
      'Kind',
      'Items',
      'Moved',
      'Left',
      'Quarantined',
      'Waiting',
      'In flight',
      'Staying',
      'Moves finished',
      'Moves failed',
      'Retries',
      'Median s',
      'p95 s',
      'Max s',
    ],
    d.kinds.map((k) => [
      k.kind,
      k.total,
      k.moved,
      k.left,
      k.quarantined,
      k.waiting,
      k.inFlight,
      k.staying,
      k.movesFinished,
      k.movesFailed,
      k.retries,
      num(k.medianSeconds),
      num(k.p95Seconds),
      num(k.maxSeconds),
    ]),
    [false, true, true, true, true, true, true, true, true, true, true, true, true, true],
  );
  const storages = table(
    'storages',
    ['Source storage', 'Items', 'Moved', 'Left', 'Quarantined', 'Waiting', 'In flight', 'Staying'],
    d.storages.map((s) => [s.storage, s.total, s.moved, s.left, s.quarantined, s.waiting, s.inFlight, s.staying]),
    [false, true, true, true, true, true, true, true],
  );
  const quarantined =
    d.quarantined.length === 0
      ? '<p id="quarantined-none">None.</p>'
      : table(
          'quarantined',
          [
            'Kind',
            'Id',
            'Name',
            'Source',
            'Attempts',
            "Reason (GitLab's error_message)",
            'Class',
            'Remedy (docs/failures.md)',
          ],
          d.quarantined.map((q) => [q.kind, q.id, q.name, q.source, q.attempts, q.reason, q.class, q.remedy]),
          [false, true, false, false, true, false, false, false],
        );
  const orphans = copiesHtml(d, { table, section, escapeHtml });
  const placement =
    d.placement.length === 0
      ? ''
      : section(
          'placement-section',
          'By destination',
          `<p class="note">${d.outcome.dryRun ? 'Where the run would send the items' : 'Where each item goes, chosen before its move was posted and never changed'}: the destination with the most room left, or bytes in proportion to the weights.</p>` +
            table(
              'placement',
              ['Destination', 'Items', 'Bytes (known sizes)', 'Without a size', 'Moved'],
              d.placement.map((p) => [
                p.destination,
                p.items,
                formatBytes(p.bytes),
                p.unsized,
                d.outcome.dryRun ? '-' : p.moved,
              ]),
              [false, true, true, true, true],
            ),
        );
  const stuck =
    d.stuck.length === 0
      ? ''
      : section(
          'stuck',
          `Stuck moves (${d.stuck.length})`,
          table(
            'stuck-moves',
            ['Kind', 'Id', 'Move', 'Move state', 'Read-only'],
            d.stuck.map((s) => [s.kind, s.id, s.moveId, s.moveState, readOnlyWords(s.readOnly)]),
          ),
        );
  const markers = table(
    'markers',
    ['At', 'Since start', 'What'],
    d.timeline.markers.map((m) => [time(m.at), formatApproxDuration(m.t * 1000), m.label]),
  );
  const idle = d.timeline.idle;
  const idleNote =
    `<p class="note" id="idle-slots">Idle slots: ${num(idle.share * 100, 1)}% of the run (${num(idle.idleSeconds, 1)} s) had fewer moves in flight than the cap while an item was due.` +
    (idle.unpipelined.length === 0
      ? ''
      : ` Not pipelined, so the slots empty between each of these drains and the next by design: ${escapeHtml(idle.unpipelined.join(', '))}` +
        " (a bulk job enqueues its whole storage itself; a kind moved by move records knows its items only from the instance's own moves).") +
    '</p>';
  const warnings =
    d.warnings.length === 0
      ? ''
      : section(
          'warnings',
          `Warnings (${d.warnings.length})`,
          `<ul>${d.warnings.map((w) => `<li>${escapeHtml(w)}</li>`).join('')}</ul>`,
        );
  const data = visibleData(d).replace(/</g, '\\u003c');
  // A revert's report is the revert's, not the forward run's: its title says so.
  const title = d.revertOf
    ? `Revert of ${d.plan ?? 'unknown plan'} (${d.revertOf}): shardmove report`
    : `shardmove report: ${d.plan ?? 'unknown plan'}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(title)}</title>
<style>${CSS}</style>
</head>
<body>
<header><h1>${escapeHtml(title)}</h1><p class="meta">Generated ${escapeHtml(time(d.generatedAt))} from ${escapeHtml(d.checkpoint)}${d.outcome.dryRun ? ' (dry run)' : ''}</p></header>
${section('outcome', 'Outcome', outcome(d))}
${section('timeline-section', 'Timeline', `<p class="note">Moves in flight (left axis) and moves ended per minute (right axis), in ${num(d.timeline.bucketSeconds, 2)}-second steps; the cap in force, pauses, cap changes, rule holds, Prometheus outages, breaker trips, maintenance windows, bounds reached and restarts are marked, and listed below.</p><div class="chart"><canvas id="timeline" role="img" aria-label="Moves in flight and throughput over time"></canvas></div>\n${idleNote}\n${markers}`)}
${section('durations-section', 'Move durations', `<p class="note">From the POST's answer to the poll that saw the move end (accurate to about one poll interval), in ${num(d.durations.binSeconds, 2)}-second bins, per kind.</p><div class="chart"><canvas id="durations" role="img" aria-label="Histogram of move durations per kind"></canvas></div>`)}
${section('kinds-section', 'By kind', kinds)}
${section('storages-section', 'By source storage', storages)}
${placement}
${networksHtml(d.networks, { table, section, escapeHtml })}
${section('quarantined-section', `Quarantined (${d.quarantined.length})`, quarantined)}
${orphans}
${stuck}
${d.revert ? section('revert-section', 'Reverted', revertHtml(d.revert)) : ''}
${section('weights-section', 'Weights', weights(d))}
${section('verification-section', 'Verification', verification(d))}
${section('geo-section', 'Geo', geo(d))}
${warnings}
<footer class="meta"><p>Checkpoint: ${escapeHtml(d.checkpoint)}</p></footer>
<script type="application/json" id="report-data">${data}</script>
<script>${scriptText(readChartJs())}</script>
<script>${scriptText(readClient())}</script>
</body>
</html>
`;
}
