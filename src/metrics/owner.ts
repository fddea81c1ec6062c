/**
 * Which run keeps a `--metrics-file`: two runs given one file would rename their own metrics over
 * each other's at every poll, and the collector would see the file flip between them. The run that
 * keeps the file says so in an owner record beside it, `.<file>.owner` (not `*.prom`, so the
 * textfile collector never reads it): JSON with its plan, plan file, checkpoint, pid, host and start.
 * A second run finds the record and is refused, naming the first.
 *
 * The record is claimed as every record of one live holder is (../runtime/ownership/claim-record.ts: link(2),
 * a dead or reused pid taken over). A record from another host cannot be judged (its pid means
 * nothing here), so it is refused with the way to remove it.
 */
import { basename, dirname, join } from 'node:path';
import type { Claim, ClaimHolder } from '../runtime/ownership/claim-record.js';
import { claimRecord } from '../runtime/ownership/claim-record.js';
import { thisHost } from '../runtime/ownership/process.js';
import { MetricsFileInUseError } from './errors.js';

export { processStartOf } from '../runtime/ownership/claim-record.js';

/** What an owner record says. */
export interface MetricsOwner extends ClaimHolder {
  plan: string;
  planFile: string;
  checkpoint: string | null;
}

/** The owner record of `file`. */
export function ownerFileOf(file: string): string {
  return join(dirname(file), `.${basename(file)}.owner`);
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

export type MetricsClaim = Claim;

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
  const named = opts.flag ?? file;
  const fields = { plan: me.plan, planFile: me.planFile, checkpoint: me.checkpoint };
  return claimRecord(ownerFile, fields, {
    ...(opts.onTakeover ? { onTakeover: opts.onTakeover } : {}),
    ...(opts.onError ? { onError: opts.onError } : {}),
    ...(opts.now !== undefined ? { now: opts.now } : {}),
    refuse: (r) => {
      if (r.why === 'unreadable')
        return new MetricsFileInUseError(
          `--metrics-file ${named}: its owner record ${ownerFile} cannot be read, so another run may keep the file; remove the record if no run does`,
        );
      if (r.why === 'changing')
        return new MetricsFileInUseError(
          `--metrics-file ${named}: its owner record ${ownerFile} kept changing while this run tried to take it; another run is starting with it`,
        );
      const other = r.holder;
      return new MetricsFileInUseError(
        `--metrics-file ${named} is kept by another run: ${describeOwner(other)}. Two runs would replace each other's metrics in it: give this run another file` +
          (other.host !== thisHost()
            ? `, or remove ${ownerFile} if that run is gone`
            : ', or wait for that run to end'),
      );
    },
  });
}
