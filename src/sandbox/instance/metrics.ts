/**
 * The monitoring a real instance has, served by the sandbox (../exporters/): one path per exporter,
 * as an operator's Prometheus scrapes several targets (Omnibus' job names in brackets):
 *
 * - `GET /-/sandbox/node-exporter/metrics`: node_exporter on the Gitaly node [node, 9100]
 * - `GET /-/sandbox/gitaly/metrics`: Gitaly's Prometheus listener [gitaly, 9236]
 * - `GET /-/sandbox/sidekiq/metrics`: Sidekiq's exporter [gitlab-sidekiq, 8082]
 * - `GET /-/sandbox/gitlab-exporter/sidekiq`: gitlab-exporter's Sidekiq probe [gitlab_exporter_sidekiq, 9168]
 *
 * Each answers the text format (version 0.0.4) to clients on the monitoring IP allowlist, without
 * credentials (GitLab's own `/-/metrics` rule); everyone else gets the HTML not-found page, as the
 * health probes do. Exempt from request faults (`/-/`). And the REST API's
 * `GET /api/v4/sidekiq/queue_metrics` (administrators), the queues without Prometheus.
 */
import { cpuUsage } from 'node:process';
import type { RequestContext, Reply } from '../http/context.js';
import type { Router } from '../http/router.js';
import { storageFilesystems } from '../seed-filesystems.js';
import { EXPOSITION_CONTENT_TYPE } from '../exporters/exposition.js';
import { renderGitaly } from '../exporters/gitaly.js';
import { renderNodeExporter } from '../exporters/node-exporter.js';
import { queueMetricsBody, readQueues, renderGitlabExporterSidekiq, renderSidekiq } from '../exporters/sidekiq.js';
import { NOT_FOUND_PAGE, isMonitoringClient } from './health.js';

/** The exporters' paths, each with what it renders. */
const EXPORTERS: Record<string, (ctx: RequestContext) => string> = {
  '/-/sandbox/node-exporter/metrics': (ctx) =>
    renderNodeExporter(ctx.state.engine.load(), storageFilesystems(ctx.state.config)),
  '/-/sandbox/gitaly/metrics': (ctx) => {
    const cpu = cpuUsage();
    return renderGitaly(ctx.state.engine.load(), (cpu.user + cpu.system) / 1e6);
  },
  '/-/sandbox/sidekiq/metrics': (ctx) => renderSidekiq(ctx.state.engine.load(), ctx.state.config),
  '/-/sandbox/gitlab-exporter/sidekiq': (ctx) =>
    renderGitlabExporterSidekiq(readQueues(ctx.state.db, ctx.state.config, ctx.state.clock.now())),
};

/** Adds the exporters' paths and `GET /api/v4/sidekiq/queue_metrics`. */
export function register(router: Router): void {
  for (const [path, render] of Object.entries(EXPORTERS)) {
    router.get(path, { level: 'none' }, (ctx): Reply =>
      isMonitoringClient(ctx)
        ? { text: render(ctx), headers: { 'content-type': EXPOSITION_CONTENT_TYPE } }
        : NOT_FOUND_PAGE,
    );
  }
  router.get('/api/v4/sidekiq/queue_metrics', { level: 'admin' }, (ctx) => ({
    body: queueMetricsBody(readQueues(ctx.state.db, ctx.state.config, ctx.state.clock.now())),
  }));
}
