/**
 * Where the CPU of an in-process simulated-clock run goes (issue 41 item 8): the scenario of
 * test/cli-rate-limits.test.ts (60 projects, 4 snippets, 4 groups, tiny projects/groups API limits,
 * `shardmove run` and the sandbox on one FakeClock), outside vitest, printing its wall and CPU time,
 * the simulated time it spans and the clock's timer fires by the code that set them.
 *
 *   node --import tsx bench/sim-cpu.ts [18.2.0|17.5.0] [--poll 100ms]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/sim-cpu.ts   (a profile as well)
 *
 * The timers are counted by wrapping the clock's own setTimeout/setInterval: the run is the test's.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startSandbox } from '../src/sandbox/index.js';
import type { Timer } from '../src/shared/clock.js';
import { sandboxEnv, tempDir, writeChangedSeed, writePlan } from '../test/support/cli-harness.js';
import { FakeClock } from '../test/support/fake-clock.js';
import { SIM_START, commandsOn } from '../test/support/sim-harness.js';

const args = process.argv.slice(2);
const version = args.find((a) => /^\d+\.\d+\.\d+$/.test(a)) ?? '18.2.0';
const pollAt = args.indexOf('--poll');
const poll = pollAt >= 0 ? args[pollAt + 1] : undefined;
if (pollAt >= 0 && !poll) throw new Error('--poll needs a duration, e.g. --poll 1s');

/** The first frame of a stack outside the clocks, this file and Node: who set the timer. */
function site(): string {
  const frames = (new Error().stack ?? '').split('\n').slice(1);
  const own = frames.find((l) => !/clock\.ts|sim-cpu\.ts|node:internal|new Promise|^Error/.test(l));
  return (own ?? '?')
    .trim()
    .replace(/^at /, '')
    .replace(/\(?\S*?\/(src|test)\//, '$1/')
    .replace(/\)$/, '');
}

const clock = new FakeClock(SIM_START);
const fires = new Map<string, number>();
const count = (key: string, fn: () => void) => () => {
  fires.set(key, (fires.get(key) ?? 0) + 1);
  fn();
};
const setTimeoutOf = clock.setTimeout.bind(clock);
const setIntervalOf = clock.setInterval.bind(clock);
clock.setTimeout = (fn: () => void, ms: number): Timer => setTimeoutOf(count(`once ${ms}ms ${site()}`, fn), ms);
clock.setInterval = (fn: () => void, ms: number): Timer => setIntervalOf(count(`every ${ms}ms ${site()}`, fn), ms);

const dir = tempDir('sim-cpu');
try {
  const seed = writeChangedSeed(dir, { projects: 60, snippets: 4, groups: 4 }, (s) => {
    s.setIn(['instance', 'version'], version);
    s.setIn(['instance', 'feature_flags'], version === '17.5.0' ? { rate_limit_groups_and_projects_api: true } : {});
    s.setIn(['instance', 'rate_limits'], { projects_api: 3, project_api: 5, groups_api: 3, group_api: 5 });
  });
  const logger = pino({ level: 'info' }, new Writable({ write: (_c, _e, done) => done() }));
  const sandbox = await startSandbox({ seed, moveDurationMs: 20, workers: 20, logger, clock });
  const plan = writePlan(dir, { concurrency: 10 });
  if (poll) writeFileSync(plan, readFileSync(plan, 'utf8').replace(/^poll: .*$/m, `poll: { interval: ${poll} }`));
  const wall = performance.now();
  const cpu = process.cpuUsage();
  const from = clock.now();
  const res = await commandsOn(clock).shardmove(['run', plan], { cwd: dir, env: sandboxEnv(sandbox.url) });
  const used = process.cpuUsage(cpu);
  await sandbox.close();
  const total = [...fires.values()].reduce((a, b) => a + b, 0);
  console.log(
    JSON.stringify({
      bench: 'sim-cpu',
      version,
      poll: poll ?? '100ms',
      exit: res.code,
      wallMs: Math.round(performance.now() - wall),
      cpuMs: Math.round((used.user + used.system) / 1000),
      simulatedMin: Math.round((clock.now() - from) / 6000) / 10,
      fires: total,
    }),
  );
  for (const [key, n] of [...fires].sort((a, b) => b[1] - a[1]).slice(0, 15))
    console.log(`${String(n).padStart(7)}  ${key}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
