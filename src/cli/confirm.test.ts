import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirm } from './confirm.js';
import type { CommandContext } from './context.js';

function ctxWith(answer: string | null, isTTY: boolean): { ctx: CommandContext; asked: () => string } {
  const stdin = Object.assign(new PassThrough(), { isTTY });
  const stderr = new PassThrough();
  let asked = '';
  stderr.on('data', (c) => (asked += String(c)));
  if (answer !== null) setImmediate(() => stdin.write(`${answer}\n`));
  const ctx: CommandContext = {
    stdout: new PassThrough(),
    stderr,
    stdin,
    env: {},
    cwd: '/',
    signal: new AbortController().signal,
  };
  return { ctx, asked: () => asked };
}

describe('confirm', () => {
  it('asks on a terminal and takes only yes or y for an answer', async () => {
    for (const [answer, expected] of [
      ['y', true],
      ['YES', true],
      ['n', false],
      ['', false],
      ['sure', false],
    ] as const) {
      const { ctx, asked } = ctxWith(answer, true);
      expect(await confirm('remove it?', { yes: false, command: 'unlock' }, ctx), answer).toBe(expected);
      expect(asked()).toContain('remove it? [y/N]');
    }
  });

  it('does not ask with --yes', async () => {
    const { ctx, asked } = ctxWith(null, false);
    expect(await confirm('remove it?', { yes: true, command: 'unlock' }, ctx)).toBe(true);
    expect(asked()).toBe('');
  });

  it('refuses without a terminal and without --yes, naming the command and the way out', async () => {
    const { ctx } = ctxWith(null, false);
    await expect(confirm('remove it?', { yes: false, command: 'weights restore' }, ctx)).rejects.toMatchObject({
      code: 'SHARDMOVE_ARGS_INVALID',
      message: expect.stringMatching(/^weights restore: .*not a terminal.*pass --yes/),
    });
  });
});
