/**
 * The progress line of a command that drives a drain (`run`, `revert`, `demo`), as one of the run's
 * observers, drawn on the stream the command's human output goes to: a live line on a terminal
 * (shared with standard error, see ./terminal.ts), whole lines in a file or a pipe; colours as
 * ./terminal.ts's wantsColour decides from the stream and the environment.
 */
import { createProgressObserver } from './progress-observer.js';
import type { RunObserver } from '../runtime/observe/observer.js';
import type { CommandContext } from './context.js';
import { TerminalOutput, wantsColour } from './terminal.js';

const ERASE_LINE = '\r\x1b[2K';

export function createProgress(ctx: Pick<CommandContext, 'stdout' | 'env'>): RunObserver {
  const stream = ctx.stdout;
  const term = stream instanceof TerminalOutput ? stream : null;
  return createProgressObserver({
    tty: stream.isTTY === true,
    colour: wantsColour(stream, ctx.env),
    columns: () => stream.columns,
    show: (line) => (term ? term.showLive(line) : void stream.write(`${ERASE_LINE}${line}`)),
    clear: () => (term ? term.clearLive() : void stream.write(ERASE_LINE)),
    print: (line) => (term ? term.writeRendered(line) : void stream.write(`${line}\n`)),
  });
}
