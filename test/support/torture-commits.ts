/**
 * Commits written while the torture runs, as users keep pushing during a migration: a project
 * commit (POST /projects/:id/repository/commits), a snippet content change (PUT /snippets/:id) or
 * a group wiki page (POST /groups/:id/wikis). Every attempt carries a unique marker in its message,
 * so the final check can find exactly which ones the sandbox stored. A read-only refusal (a move is
 * running) is retried later, as a user would; an answer of 2xx is "accepted" and must never be lost.
 * A request cut off without an answer (the sandbox was killed) is ambiguous: it may or may not
 * have landed, and the check takes whichever the sandbox recorded.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export type Kind = 'project' | 'snippet' | 'group';

export interface CommitAttempt {
  kind: Kind;
  id: number;
  marker: string;
}

export interface CommitLedger {
  accepted: CommitAttempt[];
  ambiguous: CommitAttempt[];
  /** 400 "read-only" answers (each retried later). */
  refusedReadOnly: number;
  /** 429, 503, refused connections and other answers: not stored, not retried. */
  notApplied: number;
}

export interface CommitInjector {
  stop(): Promise<CommitLedger>;
}

const REQUEST_TIMEOUT_MS = 5_000;
const MAX_READ_ONLY_RETRIES = 20;

function request(url: string, token: string, t: CommitAttempt): { path: string; method: string; body: unknown } {
  if (t.kind === 'project') {
    return {
      method: 'POST',
      path: `${url}/api/v4/projects/${t.id}/repository/commits`,
      body: {
        branch: 'main',
        commit_message: t.marker,
        actions: [{ action: 'create', file_path: `${t.marker}.txt`, content: t.marker }],
      },
    };
  }
  if (t.kind === 'snippet')
    return { method: 'PUT', path: `${url}/api/v4/snippets/${t.id}`, body: { title: t.marker, content: t.marker } };
  return { method: 'POST', path: `${url}/api/v4/groups/${t.id}/wikis`, body: { title: t.marker, content: t.marker } };
}

/** Whether a fetch failure proves the request never reached the server. */
function neverSent(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string } }).cause;
  return cause?.code === 'ECONNREFUSED';
}

/**
 * Writes one commit about every `intervalMs` to a random target until stopped. `url()` is read at
 * each attempt because the sandbox may come back on another address.
 */
export function startCommitInjector(opts: {
  url: () => string;
  token: string;
  targets: readonly { kind: Kind; id: number }[];
  random: () => number;
  intervalMs: number;
  prefix: string;
}): CommitInjector {
  const ledger: CommitLedger = { accepted: [], ambiguous: [], refusedReadOnly: 0, notApplied: 0 };
  const retries: { kind: Kind; id: number; tries: number; at: number }[] = [];
  let stopped = false;
  let n = 0;
  const loop = (async () => {
    while (!stopped && opts.targets.length > 0) {
      const now = Date.now();
      const due = retries.findIndex((r) => r.at <= now);
      const pick =
        due >= 0
          ? (retries.splice(due, 1)[0] as { kind: Kind; id: number; tries: number })
          : {
              ...(opts.targets[Math.floor(opts.random() * opts.targets.length)] as { kind: Kind; id: number }),
              tries: 0,
            };
      const attempt: CommitAttempt = { kind: pick.kind, id: pick.id, marker: `${opts.prefix}-${++n}` };
      const r = request(opts.url(), opts.token, attempt);
      try {
        const res = await fetch(r.path, {
          method: r.method,
          headers: { 'PRIVATE-TOKEN': opts.token, 'content-type': 'application/json' },
          body: JSON.stringify(r.body),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await res.text();
        if (res.ok) ledger.accepted.push(attempt);
        else if (res.status === 400 && text.includes('read-only')) {
          ledger.refusedReadOnly++;
          if (pick.tries < MAX_READ_ONLY_RETRIES)
            retries.push({
              kind: pick.kind,
              id: pick.id,
              tries: pick.tries + 1,
              at: Date.now() + 200 + opts.random() * 800,
            });
        } else ledger.notApplied++;
      } catch (err) {
        if (neverSent(err)) ledger.notApplied++;
        else ledger.ambiguous.push(attempt);
      }
      await sleep(opts.intervalMs * (0.5 + opts.random()));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return ledger;
    },
  };
}
