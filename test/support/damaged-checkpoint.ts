/**
 * Checkpoints damaged as a disk or a careless copy damages them, for the tests of the whole-file
 * check (store/open.ts, runtime/precheck.ts, every command that opens a checkpoint): one page
 * overwritten, the header and the length as they were, which SQLite does not see when it opens the
 * file and meets only when a query reads that page.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import Database from 'better-sqlite3';
import { openCheckpoint } from '../../src/store/checkpoint.js';

/** SQLite's page size in the checkpoints shardmove writes. */
export const PAGE = 4096;

/** A sound checkpoint whose event log spans many pages (300 events of 200 characters). */
export function checkpointWithEvents(file: string): void {
  const cp = openCheckpoint(file);
  cp.saveRun({ planName: 'p', planHash: 'h', machineVersion: 1, snapshot: {} });
  cp.batch(() => {
    for (let i = 0; i < 300; i++) cp.appendEvent('run.restart', { reason: 'x'.repeat(200) }, i);
  });
  cp.close();
}

/** Page `n` (1-based) filled with `fill`. */
export function overwritePage(file: string, n: number, fill = 0x41): void {
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, Buffer.alloc(PAGE, fill), 0, PAGE, (n - 1) * PAGE);
  } finally {
    closeSync(fd);
  }
}

/**
 * A page in the middle of the event log (a leaf of its b-tree, found with SQLite's dbstat table):
 * one that `status` never reads, so only a check of the whole file finds it.
 */
export function eventLogPage(file: string): number {
  // Not read-only: a read-only connection would leave a -wal and a -shm beside the file.
  const db = new Database(file, { fileMustExist: true });
  try {
    const leaves = db
      .prepare(`SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno`)
      .all() as { pageno: number }[];
    return leaves[Math.floor(leaves.length / 2)]!.pageno;
  } finally {
    db.close();
  }
}

/** One leaf page of the event log overwritten with garbage. */
export function overwriteEventPage(file: string): void {
  overwritePage(file, eventLogPage(file));
}
