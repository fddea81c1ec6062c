/**
 * A sandbox on a manual clock, for tests of its move engine: `advance(ms)` moves time and lets the
 * engine act on it. Every sandbox started here is closed after the test that started it.
 */
import { onTestFinished } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import type { FaultOptions } from '../../src/sandbox/faults.js';
import type { Seed } from '../../src/sandbox/seed-schema.js';
import { realTimersAt } from './fake-clock.js';

export async function startManualSandbox(
  seed: Seed,
  moveDurationMs: number,
  faults: Partial<FaultOptions> = {},
): Promise<{ sb: RunningSandbox; advance: (ms: number) => Promise<void> }> {
  let now = Date.parse('2026-06-01T00:00:00Z');
  const sb = await startSandbox({ seed, moveDurationMs, clock: realTimersAt(() => now), faults });
  onTestFinished(() => sb.close());
  const advance = async (ms: number) => {
    now += ms;
    sb.state.engine.kick();
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  return { sb, advance };
}
