// Whether a clone's dist/ was compiled from its sources as they are now: the build stamp exists with
// dist/cli/main.js and no source the build reads (src/ without tests, the tsconfigs) is newer than it.
// bin/shardmove runs dist/ only then; the test suite's global set-up builds when it is not (so tests start
// the compiled CLI, and never a stale one).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The newest modification time among what the build reads: src/ (tests aside) and the tsconfigs. */
function newestSource(root) {
  const src = join(root, 'src');
  const files = readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
  files.push(join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json'));
  return Math.max(...files.map((f) => statSync(f, { throwIfNoEntry: false })?.mtimeMs ?? 0));
}

/** True when root's dist/ holds a build no older than every source it was compiled from. */
export function builtIsCurrent(root) {
  const at = statSync(join(root, 'dist', '.build-stamp'), { throwIfNoEntry: false })?.mtimeMs;
  return at !== undefined && existsSync(join(root, 'dist', 'cli', 'main.js')) && newestSource(root) <= at;
}
