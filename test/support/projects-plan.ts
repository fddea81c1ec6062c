/**
 * For the tests of many destinations and fork networks: a plan that drains nfs-1's projects into
 * `to` on the sandbox (credentials from ${SHARDMOVE_URL} / ${SHARDMOVE_TOKEN}), and the sandbox's
 * own record of where every project is.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningSandbox } from '../../src/sandbox/index.js';

export function writeProjectsPlan(
  dir: string,
  to: readonly string[],
  opts: { name?: string; extra?: readonly string[]; moveLines?: readonly string[] } = {},
): string {
  const name = opts.name ?? 'projects';
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'version: 1',
      `name: ${name}`,
      'instance:',
      '  url: ${SHARDMOVE_URL}',
      '  token: ${SHARDMOVE_TOKEN}',
      'move:',
      '  from: [nfs-1]',
      `  to: [${to.join(', ')}]`,
      ...(opts.moveLines ?? []),
      '  kinds: [projects]',
      '  concurrency: 6',
      'poll: { interval: 100ms }',
      'retry: { max_attempts: 2, backoff: 100ms }',
      ...(opts.extra ?? []),
      '',
    ].join('\n'),
  );
  return file;
}

export interface SandboxProject {
  id: number;
  storage: string;
  size_mb: number;
}

/** Every project with its storage and size, from the sandbox's database. */
export function sandboxProjects(sandbox: RunningSandbox): SandboxProject[] {
  return sandbox.state.db
    .prepare(`SELECT id, storage, size_mb FROM items WHERE kind = 'project' ORDER BY id`)
    .all() as SandboxProject[];
}
