/**
 * `npm run build`, which `npm pack` runs (prepack): compiles src/ to dist/ with tsconfig.build.json
 * (tests left out), copies every file under src/ that is not TypeScript (what the code reads beside
 * itself at run time, such as the HTML report's client.js) to the same place under dist/, and stamps
 * dist/ with the time the build started. bin/shardmove in a clone runs dist/ only while no source is
 * newer than that stamp. dist/ is emptied first, so a source deleted since the last build leaves nothing.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const src = join(root, 'src');
const dist = join(root, 'dist');

/** Files under src/ that tsc does not emit and the code reads at run time, relative to src/. */
export function sourceAssets(dir: string = src): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.endsWith('.ts'))
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

function build(): number {
  // Sources saved while tsc runs are newer than the stamp, so the next start notices them.
  const started = new Date();
  rmSync(dist, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (r.status !== 0) return r.status ?? 1;
  for (const asset of sourceAssets()) {
    mkdirSync(dirname(join(dist, asset)), { recursive: true });
    copyFileSync(join(src, asset), join(dist, asset));
  }
  const stamp = join(dist, '.build-stamp');
  writeFileSync(stamp, `built from src/ as of ${started.toISOString()} by \`npm run build\`\n`);
  utimesSync(stamp, started, started);
  return 0;
}

if (process.argv[1] === import.meta.filename) process.exitCode = build();
