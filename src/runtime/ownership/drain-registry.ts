/**
 * One drain per storage at a time, on this host: every real run records, for each source storage
 * of its plan, that it drains that storage of that instance, in a per-user registry of records
 * (`$XDG_RUNTIME_DIR/shardmove/drains/`, else `<tmpdir>/shardmove-<uid>/drains/`). A second run
 * of the same instance and a storage already taken, under another checkpoint (the same plan with
 * another `--state`, or another plan over the same source), is refused at once, naming the live one.
 * The checkpoint's own lock keeps two runs off one checkpoint; this keeps two checkpoints off one
 * storage.
 *
 * Each record is claimed as a `--metrics-file`'s owner record is (./claim-record.ts: link(2), a dead
 * or reused pid taken over). Its name is a hash of the instance (`instanceKey`: its host, port and
 * path, however the URL names them) and the storage, so no secret and no path reaches the
 * registry's file names. A run that
 * took its checkpoint's lock over from a frozen process takes that process's records too: the lock
 * decided which of the two is the run.
 */
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Claim, ClaimHolder, ClaimRefusal } from './claim-record.js';
import { claimRecord, holderIsLive, readClaimRecord } from './claim-record.js';
import { DRAIN_RUNNING, RuntimeError } from '../errors.js';
import { thisHost } from './process.js';
import { shellWord } from '../../shared/shell-word.js';

/** What a drain record says, beside its holder. */
export interface DrainRecord {
  /** The instance, as `instanceKey` writes it: host, port and path; no scheme, credentials, query or fragment. */
  instance: string;
  storage: string;
  plan: string;
  planFile: string;
  checkpoint: string;
}

export type LiveDrain = DrainRecord & ClaimHolder;

/** Ports a scheme takes when none is written: an explicit one of these says no more than none. */
const DEFAULT_PORTS = new Set(['80', '443']);

/** This host under any of its names: `localhost`, 127.0.0.0/8, `::1` (and the IPv4-mapped 127/8). */
function isLoopback(host: string): boolean {
  return (
    host === 'localhost' ||
    /^127\.\d+\.\d+\.\d+$/.test(host) ||
    host === '[::1]' ||
    /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host)
  );
}

/**
 * The instance URL as the registry knows it: one instance, one key, however the plan writes it.
 * The host lower-case and without a trailing dot, every loopback name as `localhost`; the port
 * only when it is neither 80 nor 443; the path without trailing slashes; no scheme, credentials,
 * query or fragment. So `http://localhost:8080`, `https://127.0.0.1:8080/` and `http://[::1]:8080`
 * are one instance, and `http://h`, `https://h` and `https://h:443` another: two names of one
 * instance must never pass for two instances (two drains of one storage), while two instances that
 * differ only in scheme do not exist in practice, so the key refuses more, never less.
 */
export function instanceKey(url: string): string {
  try {
    const u = new URL(url);
    const name = u.hostname.toLowerCase().replace(/\.$/, '');
    const host = isLoopback(name) ? 'localhost' : name;
    const port = u.port && !DEFAULT_PORTS.has(u.port) ? `:${u.port}` : '';
    const path = u.pathname.replace(/\/+$/, '');
    return `${host}${port}${path}`;
  } catch {
    // Not a URL the client would take either; the hash still keeps it out of the file name.
    return url.replace(/\/\/[^@/]*@/, '//');
  }
}

/** The instance URL as a refusal names it: as the plan writes it, without credentials, query or fragment. */
function instanceShown(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return instanceKey(url);
  }
}

/** The record's file name for (instance, storage): a hash, so nothing of either shows in the registry. */
export function drainRecordName(instance: string, storage: string): string {
  const h = createHash('sha256')
    .update(`${instanceKey(instance)}\n${storage}`)
    .digest('hex');
  return `${h.slice(0, 32)}.json`;
}

/**
 * The registry's folder for this user: `$XDG_RUNTIME_DIR/shardmove/drains` (a per-user folder the
 * system makes and removes at logout and reboot), else `<tmpdir>/shardmove-<uid>/drains`, made 0700.
 */
export function registryDir(env: Readonly<Record<string, string | undefined>>): string {
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && runtime.startsWith('/')) return join(runtime, 'shardmove', 'drains');
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  return join(env.TMPDIR && env.TMPDIR.startsWith('/') ? env.TMPDIR : tmpdir(), `shardmove-${uid}`, 'drains');
}

/**
 * Makes the folder (0700), and refuses to use one another user could write or plant: a symlink,
 * not a directory, not this user's, or writable by others (a shared /tmp).
 */
function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const d of [join(dir, '..'), dir]) {
    const st = lstatSync(d);
    if (!st.isDirectory()) throw new Error(`${d} is not a directory`);
    const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
    if (st.uid !== uid) throw new Error(`${d} belongs to another user (uid ${st.uid})`);
    if ((st.mode & 0o022) !== 0)
      throw new Error(`${d} can be written by others (mode ${(st.mode & 0o777).toString(8)})`);
  }
}

export interface DrainClaimRequest {
  instanceUrl: string;
  storages: readonly string[];
  plan: string;
  planFile: string;
  checkpoint: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Hears of a record left by a run that is gone, taken over. */
  onTakeover?: (stale: LiveDrain) => void;
  /** When the registry cannot be used at all: hears why (the run goes on without it). */
  onError?: (err: unknown) => void;
  now?: number;
}

/** How a refusal names the live run. */
export function describeDrain(d: LiveDrain): string {
  const elsewhere = d.host !== thisHost();
  return (
    `pid ${d.pid} on ${d.host}, checkpoint ${d.checkpoint} (plan ${d.plan}, plan file ${d.planFile}), started ${d.startedAt}` +
    (elsewhere ? ' (another host: whether it still runs cannot be told from here)' : '')
  );
}

function refusal(req: DrainClaimRequest, file: string, storage: string, r: ClaimRefusal<DrainRecord>): RuntimeError {
  if (r.why === 'live')
    return new RuntimeError(
      DRAIN_RUNNING,
      `refusing: another run drains ${storage} of ${instanceShown(req.instanceUrl)} on this host: ${describeDrain(r.holder)}. ` +
        'Two drains of one storage would fight over its items. Nothing was written. ' +
        `Wait for it to end, or stop it: shardmove control ${shellWord(r.holder.planFile)} --state ${shellWord(r.holder.checkpoint)} --stop`,
    );
  return new RuntimeError(
    DRAIN_RUNNING,
    r.why === 'unreadable'
      ? `refusing: the record of the run that drains ${storage} (${file}) cannot be read, so another run may drain it; remove the record if no run does. Nothing was written`
      : `refusing: the record of the run that drains ${storage} (${file}) kept changing while this run tried to take it: another run is starting on it. Nothing was written`,
  );
}

/**
 * Records this process as the drain of each of the plan's source storages (in sorted order, so two
 * runs over overlapping sources cannot each take half). Throws SHARDMOVE_DRAIN_RUNNING (exit 4)
 * when a live run of another checkpoint holds one; the records already taken are let go first.
 */
export function claimDrain(req: DrainClaimRequest): Claim {
  const dir = registryDir(req.env);
  try {
    ensurePrivateDir(dir);
  } catch (err) {
    req.onError?.(err);
    return { release: () => undefined };
  }
  const held: Claim[] = [];
  const release = () => {
    for (const c of held.splice(0).reverse()) c.release();
  };
  const instance = instanceKey(req.instanceUrl);
  try {
    for (const storage of [...new Set(req.storages)].sort()) {
      const file = join(dir, drainRecordName(req.instanceUrl, storage));
      const fields: DrainRecord = {
        instance,
        storage,
        plan: req.plan,
        planFile: req.planFile,
        checkpoint: req.checkpoint,
      };
      held.push(
        claimRecord(file, fields, {
          refuse: (r) => refusal(req, file, storage, r),
          // The same checkpoint: its lock, which this run holds now, decided.
          mayReplace: (holder) => holder.checkpoint === req.checkpoint,
          ...(req.onTakeover ? { onTakeover: req.onTakeover } : {}),
          ...(req.onError ? { onError: req.onError } : {}),
          ...(req.now !== undefined ? { now: req.now } : {}),
        }),
      );
    }
  } catch (err) {
    release();
    throw err;
  }
  return { release };
}

/**
 * The live runs on this host that drain any of `storages` of the instance under another checkpoint
 * than `checkpoint`, read without claiming (a dry run says what a real run would meet).
 */
export function liveDrains(
  req: Pick<DrainClaimRequest, 'instanceUrl' | 'storages' | 'env' | 'checkpoint'>,
): LiveDrain[] {
  const dir = registryDir(req.env);
  const out: LiveDrain[] = [];
  for (const storage of [...new Set(req.storages)].sort()) {
    const r = readClaimRecord<DrainRecord>(join(dir, drainRecordName(req.instanceUrl, storage)));
    if (typeof r === 'object' && r.checkpoint !== req.checkpoint && holderIsLive(r)) out.push(r);
  }
  return out;
}
