/**
 * `npm run checks`, the start of `npm test`: lint, format:check and typecheck at the same time. Each of
 * the three is one process that keeps one core busy, so one after another they left the second core of
 * the 2-core development machine idle for about a minute (docs/benchmarks.md). Each one's output is
 * printed whole when it ends, under its name, so the three never interleave; the exit code is the
 * first failing one's, and every failing check is named.
 */
import { spawn } from 'node:child_process';

const CHECKS = ['lint', 'format:check', 'typecheck'] as const;

interface Outcome {
  name: string;
  code: number;
  output: string;
}

function run(name: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const npm = process.env.npm_execpath;
    // Under npm, its own CLI through this node; run by hand, the npm on the PATH.
    const [cmd, args] = npm ? [process.execPath, [npm, 'run', '--silent', name]] : ['npm', ['run', '--silent', name]];
    const chunks: Buffer[] = [];
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', (err) => resolve({ name, code: 1, output: `${err.message}\n` }));
    child.on('close', (code, signal) =>
      resolve({ name, code: code ?? (signal ? 1 : 0), output: Buffer.concat(chunks).toString() }),
    );
  });
}

const outcomes = await Promise.all(
  CHECKS.map((name) =>
    run(name).then((o) => {
      process.stdout.write(`> ${o.name}: ${o.code === 0 ? 'ok' : `failed (exit ${o.code})`}\n${o.output}`);
      return o;
    }),
  ),
);
const failed = outcomes.filter((o) => o.code !== 0);
if (failed.length > 0) {
  process.stderr.write(`npm test: ${failed.map((o) => o.name).join(', ')} failed\n`);
  process.exitCode = failed[0]!.code;
}
