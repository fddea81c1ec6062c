/**
 * Reading the sandbox's exporters as a scrape would: the text of one exporter's path, and a storage's
 * filesystem series found by the mountpoint the seed maps it to (node_exporter has no storage label).
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { storageFilesystems } from '../../src/sandbox/seed-filesystems.js';

export const EXPORTER_PATHS = {
  node: '/-/sandbox/node-exporter/metrics',
  gitaly: '/-/sandbox/gitaly/metrics',
  sidekiq: '/-/sandbox/sidekiq/metrics',
  gitlabExporterSidekiq: '/-/sandbox/gitlab-exporter/sidekiq',
} as const;

/** The parsed families of one exporter. */
export async function scrapeExporter(sb: RunningSandbox, path: string) {
  return parsePrometheusTextFormat(await (await fetch(`${sb.url}${path}`)).text());
}

/** `name`'s value for `storage`'s filesystem (undefined when the series is absent). */
export async function filesystemValue(sb: RunningSandbox, name: string, storage: string): Promise<number | undefined> {
  const mountpoint = storageFilesystems(sb.state.config).get(storage)?.mountpoint;
  const v = (await scrapeExporter(sb, EXPORTER_PATHS.node))
    .find((f) => f.name === name)
    ?.metrics.find((m) => m.labels?.mountpoint === mountpoint)?.value;
  return v === undefined ? undefined : Number(v);
}
