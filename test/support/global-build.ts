/**
 * vitest's global set-up: compiles src/ to dist/ (`npm run build`) unless dist/ is already current, so
 * every CLI process the tests start runs the compiled code with plain node (bin/shardmove picks dist/
 * only while no source is newer than its stamp) instead of compiling the TypeScript through tsx at each
 * start. A source saved during the run makes dist/ stale again, and bin/shardmove then falls back to
 * tsx by itself, so no test ever runs code older than the tree.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { builtIsCurrent } from '../../bin/build-current.js';

const ROOT = join(import.meta.dirname, '..', '..');

export default function setup(): void {
  if (builtIsCurrent(ROOT)) return;
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'build.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`npm run build failed before the tests (exit ${r.status ?? r.signal})`);
}
