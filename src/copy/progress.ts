/**
 * The copy's progress line: step, repositories done/total and bytes done/total. On a terminal it is
 * redrawn in place (at most 4 times a second); otherwise a line every 10 seconds and at each step.
 */
import { formatBytes } from '../report/summary.js';

export interface CopyProgressView {
  step: string;
  reposDone: number;
  reposTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export function renderCopyProgress(v: CopyProgressView): string {
  return `copy ${v.step} | repositories ${v.reposDone}/${v.reposTotal} | ${formatBytes(v.bytesDone)} of ${formatBytes(v.bytesTotal)}`;
}

export interface CopyProgressOutput {
  update(v: CopyProgressView): void;
  /** Ends the line (terminal) or prints the last state. */
  stop(): void;
}

export function createCopyProgress(
  out: NodeJS.WritableStream & { isTTY?: boolean },
  clock: () => number = Date.now,
): CopyProgressOutput {
  let last: CopyProgressView | undefined;
  let lastDrawn = -Infinity;
  let lastStep = '';
  const every = out.isTTY ? 250 : 10_000;
  const draw = (v: CopyProgressView) => {
    out.write(out.isTTY ? `\r\x1b[K${renderCopyProgress(v)}` : `${renderCopyProgress(v)}\n`);
    lastDrawn = clock();
  };
  return {
    update(v) {
      last = v;
      if (v.step !== lastStep || clock() - lastDrawn >= every) {
        lastStep = v.step;
        draw(v);
      }
    },
    stop() {
      if (last && !out.isTTY) draw(last);
      if (out.isTTY && last) out.write('\n');
    },
  };
}
