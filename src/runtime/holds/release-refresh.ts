/**
 * The instance's release is read at every start, not only by the first pre-flight: a run resumed
 * after an upgrade (or a downgrade, or a restore onto another host) must not judge moves by the
 * release it saw days ago. Everything that depends on it reads the machine's context when it asks
 * (failure classes and their remedies, `error_message` on move records, the Sidekiq queue of a bulk
 * job, the per-item move routes and hidden projects, pool replication), so the restored snapshot's
 * context gets the release read now, and its warnings say what changed. What pre-flight decided
 * from the old release for the drains already under way (which kinds go by listing, which by move
 * records) is kept: it is the checkpoint's shape, and a fresh start decides it again.
 */
import type { Logger } from 'pino';
import type { Snapshot } from 'xstate';
import type { InstanceApi } from '../../api/types.js';
import type { RunContext } from '../../machine/types.js';

/** How the warning about a changed release starts (an older one is replaced, not repeated). */
const CHANGED = 'the instance now runs GitLab ';

interface Restorable {
  status?: string;
  context?: RunContext;
}

/** The warning for a release read at this start that differs from the checkpoint's. */
export function releaseChangedWarning(before: string, now: string): string {
  return (
    `${CHANGED}${now}, not ${before} as when this run started: what depends on the release now follows ${now} ` +
    '(failure classes and remedies, move records, hidden projects, bulk jobs); the way each kind is found ' +
    '(listing or move records) stays as pre-flight chose it; start afresh to choose it again'
  );
}

/**
 * `snapshot` with the release read from the instance now, when it is a run under way whose saved
 * release differs. Unchanged when there is no snapshot, it has ended, it has no release yet (its
 * pre-flight will read one), the release is the same, or the instance cannot be read now (the
 * run's own first request will meet the same trouble and say so).
 */
export async function refreshRelease(
  snapshot: Snapshot<unknown> | undefined,
  api: Pick<InstanceApi, 'version'>,
  log: Pick<Logger, 'info' | 'warn'>,
): Promise<Snapshot<unknown> | undefined> {
  const s = snapshot as (Snapshot<unknown> & Restorable) | undefined;
  const context = s?.context;
  if (!s || s.status === 'done' || !context || context.instanceVersion === null) return snapshot;
  let now: { version: string; enterprise: boolean | null };
  try {
    now = await api.version();
  } catch (err) {
    log.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'the release could not be read again at this start',
    );
    return snapshot;
  }
  const before = context.instanceVersion;
  if (now.version === before && (now.enterprise ?? null) === (context.enterprise ?? null)) return snapshot;
  log.warn({ before, now: now.version }, 'the instance runs another release than when this run started');
  const warnings = context.warnings.filter((w) => !w.startsWith(CHANGED));
  if (now.version !== before) warnings.push(releaseChangedWarning(before, now.version));
  const next: RunContext = { ...context, instanceVersion: now.version, enterprise: now.enterprise ?? null, warnings };
  return { ...s, context: next } as unknown as Snapshot<unknown>;
}
