import { PassThrough } from 'node:stream';
import { textWidth } from './context.js';
import { describe, expect, it } from 'vitest';
import {
  escapeControls,
  promptStreamOf,
  terminalSafe,
  terminalStreams,
  terminalText,
  wantsColour,
} from './terminal.js';

describe('escapeControls', () => {
  it('writes C0 (but tab and newline), DEL, C1 and bidi controls as \\uXXXX', () => {
    expect(escapeControls('a\u001b[2Jb\rc\u0007d\u007fe\u009bf\u202eg\u2066h')).toBe(
      'a\\u001b[2Jb\\u000dc\\u0007d\\u007fe\\u009bf\\u202eg\\u2066h',
    );
    expect(escapeControls('tab\there\nnext line, ünïcode ✓')).toBe('tab\there\nnext line, ünïcode ✓');
  });

  it('is JSON-safe: an escaped JSON text parses to the same value', () => {
    const value = { name: 'x\u0085y\u009b\u202e' };
    expect(JSON.parse(escapeControls(JSON.stringify(value)))).toEqual(value);
  });
});

describe('terminalText', () => {
  it('keeps only our own leading redraw of the progress line', () => {
    expect(terminalText('\r\u001b[2Kdone 3/4')).toBe('\r\u001b[2Kdone 3/4');
    expect(terminalText('\r\u001b[Kcopy')).toBe('\r\u001b[Kcopy');
    expect(terminalText('\r\u001b[2Kname \u001b[2J')).toBe('\r\u001b[2Kname \\u001b[2J');
    expect(terminalText('x\r\u001b[2K')).toBe('x\\u000d\\u001b[2K');
  });
});

describe('terminalSafe', () => {
  it('escapes strings and buffers written to the stream and leaves the rest of the stream alone', () => {
    const sink = new PassThrough();
    const out: string[] = [];
    sink.on('data', (c) => out.push(String(c)));
    const safe = terminalSafe(sink);
    safe.write('a\u001b]0;t\u0007\n');
    safe.write(Buffer.from('b\u001bc'));
    expect(out.join('')).toBe('a\\u001b]0;t\\u0007\nb\\u001bc');
    expect(safe.writable).toBe(true);
  });
});

/** A terminal-like stream that records what reaches it. */
function fakeTerminal(isTTY = true) {
  const sink = Object.assign(new PassThrough(), { isTTY, columns: 80 });
  const out: string[] = [];
  sink.on('data', (c) => out.push(String(c)));
  return { sink, text: () => out.join('') };
}

describe('TerminalOutput', () => {
  it('is a plain stream: its terminal properties are those of its target, a write callback is called', async () => {
    const t = fakeTerminal();
    const safe = terminalSafe(t.sink);
    expect(safe.isTTY).toBe(true);
    expect(safe.columns).toBe(80);
    await new Promise<void>((done) => safe.write('x\n', () => done()));
    expect(t.text()).toBe('x\n');
  });

  it('keeps one live line below whatever else standard output and standard error write', () => {
    const out = fakeTerminal();
    const err = fakeTerminal();
    const { stdout, stderr } = terminalStreams(out.sink, err.sink);
    stdout.showLive('\x1b[1mline 1\x1b[0m');
    stderr.write('warning: \x1b[2J\n');
    stdout.showLive('line 2');
    stdout.clearLive();
    expect(out.text()).toBe('\r\x1b[2K\x1b[1mline 1\x1b[0m\r\x1b[2K\x1b[1mline 1\x1b[0m\r\x1b[2Kline 2\r\x1b[2K');
    // The warning came between the erase and the redraw, escaped.
    expect(err.text()).toBe('warning: \\u001b[2J\n');
  });

  it('gives a prompt the terminal itself (its cursor codes arrive as they are), never other streams', () => {
    const t = fakeTerminal();
    expect(promptStreamOf(terminalSafe(t.sink))).toBe(t.sink);
    const plain = new PassThrough();
    expect(promptStreamOf(plain)).toBe(plain);
  });
});

describe('wantsColour', () => {
  it.each([
    [true, {}, true],
    [false, {}, false],
    [true, { NO_COLOR: '1' }, false],
    [true, { NO_COLOR: '' }, true],
    [true, { TERM: 'dumb' }, false],
    [false, { FORCE_COLOR: '1' }, true],
    [true, { FORCE_COLOR: '0' }, false],
    [true, { NO_COLOR: '1', FORCE_COLOR: '1' }, true],
  ] as const)('terminal %s, %j: %s', (isTTY, env, expected) => {
    expect(wantsColour({ isTTY }, env)).toBe(expected);
  });
});

describe('the width of the text outputs', () => {
  it("wraps at a terminal's columns, and at 80 in a pipe or a file", () => {
    expect(textWidth({ isTTY: true, columns: 132 })).toBe(132);
    expect(textWidth({ isTTY: true, columns: 60 })).toBe(60);
    expect(textWidth({ isTTY: true, columns: 20 })).toBe(40);
    expect(textWidth({ isTTY: false, columns: 132 })).toBe(80);
    expect(textWidth({})).toBe(80);
  });
});
