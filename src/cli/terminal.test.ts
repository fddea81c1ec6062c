import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { escapeControls, terminalSafe, terminalText } from './terminal.js';

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
