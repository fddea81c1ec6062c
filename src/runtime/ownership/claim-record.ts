/**
 * A claim on a name that one live process holds at a time, kept as a small JSON record on disk:
 * which run keeps a `--metrics-file` (../metrics/owner.ts), and which run drains a storage of an
 * instance on this host (./drain-registry.ts). One mechanism, so both say the same things the same
 * way.
 *
 * The record is put in place with link(2), which fails when the name is taken, so of two processes
 * that start at once exactly one gets it. A record whose process is gone (its pid is dead on this
 * host, or now belongs to a process started later: a reused pid) is stale and taken over: it is
 * renamed aside, and if what was renamed turns out to be a live run's record (another run took the
 * stale one over in between) it is linked back. A record from another host cannot be judged (its
 * pid means nothing here), so it counts as live. A process killed with SIGKILL leaves its record;
 * the next claim on the host takes it over.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isAlive, thisHost } from './process.js';

/** What every claim record says of the process that holds it, beside its own fields. */
export interface ClaimHolder {
  pid: number;
  host: string;
  /** The process's start on this host (Linux: /proc/<pid>/stat), to tell a reused pid; null elsewhere. */
  processStart: string | null;
  startedAt: string;
  /** This claim's own mark, so a process only ever removes its own record. */
  claim: string;
}

export interface Claim {
  /** Removes the record, if it is still this claim's. */
  release(): void;
}

/** Why a claim was not had: a live holder, a record that cannot be read, or one that kept changing. */
export type ClaimRefusal<T> = { why: 'live'; holder: T & ClaimHolder } | { why: 'unreadable' } | { why: 'changing' };

export interface ClaimOptions<T> {
  /** The error to throw when the claim is refused. */
  refuse: (r: ClaimRefusal<T>) => Error;
  /** Hears of a stale record taken over. */
  onTakeover?: (stale: T & ClaimHolder) => void;
  /**
   * A live holder whose record this claim may replace all the same (a run that took its checkpoint's
   * lock over from a frozen process: the lock decided). Absent: none.
   */
  mayReplace?: (holder: T & ClaimHolder) => boolean;
  /** When no record can be written at all (a folder not writable): hears why; the claim is then a no-op. */
  onError?: (err: unknown) => void;
  now?: number;
}

/** Rounds of "claim, find a stale record, take it over" before giving up on a record others keep changing. */
const ROUNDS = 5;

/** The start time of process `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), or null. */
export function processStartOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the record's process still runs: unknowable for another host's, so taken as live. */
export function holderIsLive(o: ClaimHolder): boolean {
  if (o.host !== thisHost()) return true;
  if (!isAlive(o.pid)) return false;
  const start = processStartOf(o.pid);
  return o.processStart === null || start === null || start === o.processStart;
}

/** The record at `file`: 'none' when there is none, 'unreadable' when it is not one. */
export function readClaimRecord<T>(file: string): (T & ClaimHolder) | 'none' | 'unreadable' {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'none' : 'unreadable';
  }
  try {
    const o = JSON.parse(text) as T & ClaimHolder;
    return typeof o === 'object' && o !== null && typeof o.pid === 'number' && typeof o.host === 'string'
      ? o
      : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

function inodeOf(file: string): bigint | null {
  try {
    return lstatSync(file, { bigint: true }).ino;
  } catch {
    return null;
  }
}

/**
 * Makes this process the holder of `recordFile`, with `fields` beside who it is. Throws what
 * `opts.refuse` makes when a live process holds it.
 */
export function claimRecord<T extends object>(recordFile: string, fields: T, opts: ClaimOptions<T>): Claim {
  const record: T & ClaimHolder = {
    ...fields,
    pid: process.pid,
    host: thisHost(),
    processStart: processStartOf(process.pid),
    startedAt: new Date(opts.now ?? Date.now()).toISOString(),
    claim: randomBytes(12).toString('hex'),
  };
  const tmp = join(dirname(recordFile), `.${basename(recordFile)}.${record.claim}.claim-tmp`);
  try {
    mkdirSync(dirname(recordFile), { recursive: true });
    const fd = openSync(tmp, 'wx', 0o644);
    try {
      writeSync(fd, `${JSON.stringify(record)}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    rmSync(tmp, { force: true });
    opts.onError?.(err);
    return { release: () => undefined };
  }
  try {
    for (let round = 0; round < ROUNDS; round++) {
      try {
        linkSync(tmp, recordFile);
        return { release: () => releaseClaim(recordFile, record.claim) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const seenIno = inodeOf(recordFile);
      const other = readClaimRecord<T>(recordFile);
      if (other === 'none') continue;
      if (other === 'unreadable') throw opts.refuse({ why: 'unreadable' });
      if (holderIsLive(other) && !(opts.mayReplace?.(other) ?? false))
        throw opts.refuse({ why: 'live', holder: other });
      takeOver(recordFile, seenIno);
      opts.onTakeover?.(other);
    }
    throw opts.refuse({ why: 'changing' });
  } finally {
    rmSync(tmp, { force: true });
  }
}

/**
 * Moves the stale record whose inode was seen aside; when what was moved is another record (a
 * process that took the stale one over meanwhile), puts it back where it was.
 */
function takeOver(recordFile: string, seenIno: bigint | null): void {
  const aside = `${recordFile}.${randomBytes(8).toString('hex')}.stale`;
  try {
    renameSync(recordFile, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    if (inodeOf(aside) !== seenIno) {
      try {
        linkSync(aside, recordFile);
      } catch {
        // A third record is in place already: it is judged in the next round.
      }
    }
  } finally {
    rmSync(aside, { force: true });
  }
}

function releaseClaim(recordFile: string, claim: string): void {
  const o = readClaimRecord<object>(recordFile);
  if (typeof o === 'object' && o.claim === claim) rmSync(recordFile, { force: true });
}
