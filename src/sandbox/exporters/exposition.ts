/**
 * Prometheus' text exposition format (version 0.0.4), as the real exporters write it: a family's
 * HELP and TYPE, then one line per series with its labels in name order, families in name order
 * (the Go client sorts both).
 */

/** The content type every exporter answers with. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface Series {
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'gauge' | 'counter';
  help: string;
  series: Series[];
}

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
function labelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function seriesLine(name: string, s: Series): string {
  const labels = Object.keys(s.labels)
    .sort()
    .map((k) => `${k}="${labelValue(s.labels[k] as string)}"`);
  return `${name}${labels.length > 0 ? `{${labels.join(',')}}` : ''} ${formatValue(s.value)}`;
}

/** The exposition text of `families` (a family without series is left out, as the Go client does). */
export function renderFamilies(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const f of [...families].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (f.series.length === 0) continue;
    lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.series) lines.push(seriesLine(f.name, s));
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
