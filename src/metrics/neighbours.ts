/**
 * The other `.prom` files of a metrics file's folder that carry a plan's series. node_exporter's
 * textfile collector merges every `.prom` file of its folder into one scrape; two files with the
 * same series (a dry run's or a rehearsal's file of the same plan, left beside the real run's) make
 * it drop one of them at every scrape, with nothing but a log line to say so.
 */
import { lstatSync, openSync, readdirSync, readSync, closeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Bytes read of each neighbour: a metrics file of shardmove is a few kilobytes. */
const READ_LIMIT = 1024 * 1024;

/** A label value as the text format writes it (backslash, double quote and newline escaped). */
function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** The start of a regular file, or null (unreadable, not a regular file: a symlink is not followed). */
function readHead(file: string): string | null {
  try {
    if (!lstatSync(file).isFile()) return null;
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(READ_LIMIT);
      const n = readSync(fd, buf, 0, READ_LIMIT, 0);
      return buf.subarray(0, n).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** Paths of the other `*.prom` files beside `file` that hold a `shardmove_` series with `plan="<plan>"`. */
export function findSamePlanFiles(file: string, plan: string): string[] {
  const dir = dirname(file);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const label = `plan="${escapeLabel(plan)}"`;
  const out: string[] = [];
  for (const name of names.sort()) {
    if (!name.endsWith('.prom') || name === basename(file)) continue;
    const text = readHead(join(dir, name));
    if (text === null) continue;
    if (text.split('\n').some((l) => l.startsWith('shardmove_') && l.includes(label))) out.push(join(dir, name));
  }
  return out;
}
