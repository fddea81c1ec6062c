/**
 * Which run keeps a `--metrics-file`: two runs given one file would rename their own metrics over
 * each other's at every poll, and the collector would see the file flip between them. The run that
 * keeps the file says so in an owner record beside it, `.<file>.owner` (not `*.prom`, so the
 * textfile collector never reads it): JSON with its plan, plan file, checkpoint, pid, host and start.
 * A second run finds the record and is refused, naming the first.
 *
 * The record is put in place with link(2), which fails when the name is taken, so of two runs that
 * start at once exactly one gets it. A record whose process is gone (its pid is dead on this host,
 * or now belongs to a process started later: a reused pid) is stale and taken over: it is renamed
 * aside, and if what was renamed turns out to be a live run's record (another run took the stale one
 * over in between) it is linked back. A record from another host cannot be judged (its pid means
 * nothing here), so it is refused with the way to remove it. A run killed with SIGKILL leaves its
 * record; the next run on the host takes it over.
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
import { isAlive, thisHost } from '../runtime/process.js';
import { MetricsFileInUseError } from './errors.js';

/** What an owner record says. */
export interface MetricsOwner {
  plan: string;
  planFile: string;
  checkpoint: string | null;
  pid: number;
  host: string;
  /** The process's start on this host (Linux: /proc/<pid>/stat), to tell a reused pid; null elsewhere. */
  processStart: string | null;
  startedAt: string;
  /** This claim's own mark, so a run only ever removes its own record. */
  claim: string;
}

/** The owner record of `file`. */
export function ownerFileOf(file: string): string {
  return join(dirname(file), `.${basename(file)}.owner`);
}

/** Rounds of "claim, find a stale record, take it over" before giving up on a file others keep changing. */
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
function isLive(o: MetricsOwner): boolean {
  if (o.host !== thisHost()) return true;
  if (!isAlive(o.pid)) return false;
  const start = processStartOf(o.pid);
  return o.processStart === null || start === null || start === o.processStart;
}

function readOwner(file: string): MetricsOwner | 'none' | 'unreadable' {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'none' : 'unreadable';
  }
  try {
    const o = JSON.parse(text) as MetricsOwner;
    return typeof o.pid === 'number' && typeof o.host === 'string' ? o : 'unreadable';
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

/** What the refusal says about the run that keeps the file. */
function describeOwner(o: MetricsOwner): string {
  const elsewhere = o.host !== thisHost();
  return (
    `plan ${o.plan} (plan file ${o.planFile}, checkpoint ${o.checkpoint ?? 'unknown'}), pid ${o.pid} on ${o.host}` +
    `, since ${o.startedAt}` +
    (elsewhere ? ' (another host: whether it still runs cannot be told from here)' : '')
  );
}

export interface MetricsClaim {
  /** Removes the owner record, if it is still this claim's. */
  release(): void;
}

/**
 * Makes this process the keeper of `file`, before the run writes anything. Throws
 * MetricsFileInUseError (exit 4) when a live run keeps it; `onTakeover` hears of a stale record
 * taken over. `flag` is how the refusal names the file (as given). When no record can be written
 * there at all (a folder not writable), `onError` hears why and the run goes on without one: the
 * metrics file cannot be written there either, which the run warns about and survives.
 */
export function claimMetricsFile(
  file: string,
  me: Pick<MetricsOwner, 'plan' | 'planFile' | 'checkpoint'>,
  opts: {
    flag?: string;
    onTakeover?: (stale: MetricsOwner) => void;
    onError?: (err: unknown) => void;
    now?: number;
  } = {},
): MetricsClaim {
  const ownerFile = ownerFileOf(file);
  const record: MetricsOwner = {
    ...me,
    pid: process.pid,
    host: thisHost(),
    processStart: processStartOf(process.pid),
    startedAt: new Date(opts.now ?? Date.now()).toISOString(),
    claim: randomBytes(12).toString('hex'),
  };
  const tmp = join(dirname(file), `.${basename(file)}.${record.claim}.owner-tmp`);
  try {
    mkdirSync(dirname(file), { recursive: true });
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
  const named = opts.flag ?? file;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      try {
        linkSync(tmp, ownerFile);
        return { release: () => releaseClaim(ownerFile, record.claim) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const seenIno = inodeOf(ownerFile);
      const other = readOwner(ownerFile);
      if (other === 'none') continue;
      if (other === 'unreadable')
        throw new MetricsFileInUseError(
          `--metrics-file ${named}: its owner record ${ownerFile} cannot be read, so another run may keep the file; remove the record if no run does`,
        );
      if (isLive(other))
        throw new MetricsFileInUseError(
          `--metrics-file ${named} is kept by another run: ${describeOwner(other)}. Two runs would replace each other's metrics in it: give this run another file` +
            (other.host !== thisHost()
              ? `, or remove ${ownerFile} if that run is gone`
              : ', or wait for that run to end'),
        );
      takeOver(ownerFile, seenIno);
      opts.onTakeover?.(other);
    }
    throw new MetricsFileInUseError(
      `--metrics-file ${named}: its owner record ${ownerFile} kept changing while this run tried to take it; another run is starting with it`,
    );
  } finally {
    rmSync(tmp, { force: true });
  }
}

/**
 * Moves the stale record whose inode was seen aside; when what was moved is another record (a run
 * that took the stale one over meanwhile), puts it back where it was.
 */
function takeOver(ownerFile: string, seenIno: bigint | null): void {
  const aside = `${ownerFile}.${randomBytes(8).toString('hex')}.stale`;
  try {
    renameSync(ownerFile, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    if (inodeOf(aside) !== seenIno) {
      try {
        linkSync(aside, ownerFile);
      } catch {
        // A third record is in place already: it is judged in the next round.
      }
    }
  } finally {
    rmSync(aside, { force: true });
  }
}

function releaseClaim(ownerFile: string, claim: string): void {
  const o = readOwner(ownerFile);
  if (typeof o === 'object' && o.claim === claim) rmSync(ownerFile, { force: true });
}
