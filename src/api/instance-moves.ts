/**
 * The InstanceApi's move calls: scheduling one move or a bulk move, reading moves back, and the
 * Sidekiq queues the moves wait in.
 */
import type { ApiClient } from './client.js';
import { ApiHttpError, ApiInvalidResponseError } from './errors.js';
import { getOrNull, moveListPath } from './instance-read.js';
import { nextPageNumber, paginateOffset } from './pagination.js';
import { parseMove } from './records.js';
import type { InstanceApi, MovePage, MoveRecord, QueueMetrics, ScheduleResult } from './types.js';

/** The move calls of the InstanceApi over the client. */
export function moveCalls(
  c: ApiClient,
): Pick<InstanceApi, 'scheduleMove' | 'scheduleBulk' | 'listItemMoves' | 'listMoves' | 'getMove' | 'queueMetrics'> {
  return {
    async scheduleMove(kind, itemId, destination): Promise<ScheduleResult> {
      const path = `/${kind}/${itemId}/repository_storage_moves`;
      try {
        const { body } = await c.request({ method: 'POST', path, body: { destination_storage_name: destination } });
        return { outcome: 'scheduled', move: parseMove(kind, body, { method: 'POST', path: `/api/v4${path}` }) };
      } catch (err) {
        // {"message":{"project":["is read-only"]}} (older: "is read only"): a move is already running.
        if (err instanceof ApiHttpError && err.status === 400 && /read[- ]only/i.test(err.gitlabMessage ?? ''))
          return { outcome: 'read-only' };
        throw err;
      }
    },

    async scheduleBulk(kind, source, destination) {
      await c.request({
        method: 'POST',
        path: moveListPath(kind),
        body: { source_storage_name: source, destination_storage_name: destination },
      });
    },

    async listItemMoves(kind, itemId): Promise<MoveRecord[]> {
      const path = `/${kind}/${itemId}/repository_storage_moves`;
      const out: MoveRecord[] = [];
      for await (const page of paginateOffset(c, path, {}))
        out.push(...page.map((m) => parseMove(kind, m, { method: 'GET', path: `/api/v4${path}` })));
      return out;
    },

    async listMoves(kind, page, perPage): Promise<MovePage> {
      const path = moveListPath(kind);
      const res = await c.request({ method: 'GET', path, query: { page, per_page: perPage } });
      if (!Array.isArray(res.body))
        throw new ApiInvalidResponseError({ method: 'GET', path: `/api/v4${path}` }, 'expected a JSON array');
      const moves = res.body.map((m) => parseMove(kind, m, { method: 'GET', path: `/api/v4${path}` }));
      const next = nextPageNumber(res.headers);
      return { moves, nextPage: next !== null && next > page && moves.length > 0 ? next : null };
    },

    async getMove(kind, moveId) {
      const path = `${moveListPath(kind)}/${moveId}`;
      const body = await getOrNull(c, path);
      return body === null ? null : parseMove(kind, body, { method: 'GET', path: `/api/v4${path}` });
    },

    async queueMetrics(): Promise<QueueMetrics> {
      const ref = { method: 'GET', path: '/api/v4/sidekiq/queue_metrics' };
      const res = await c.request({ method: 'GET', path: '/sidekiq/queue_metrics' });
      const raw = (res.body as { queues?: unknown } | null)?.queues;
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
        throw new ApiInvalidResponseError(ref, 'expected {queues: {<name>: {backlog, latency}}}');
      const queues: QueueMetrics['queues'] = {};
      for (const [name, q] of Object.entries(raw as Record<string, unknown>)) {
        const { backlog, latency } = (q ?? {}) as { backlog?: unknown; latency?: unknown };
        if (typeof backlog !== 'number' || typeof latency !== 'number' || backlog < 0 || !Number.isFinite(latency))
          throw new ApiInvalidResponseError(ref, `queue ${JSON.stringify(name)} without a numeric backlog and latency`);
        queues[name] = { backlog, latency };
      }
      return { queues };
    },
  };
}
