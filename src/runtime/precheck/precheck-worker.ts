/**
 * The worker of ./precheck.ts: finds the checkpoint as `run` will and checks it whole as a reader.
 * It reads the plan only for its name and `checkpoint:` field (no validation, no credentials: the
 * run reads the plan for itself), and posts the verdict.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { parse } from 'yaml';
import { checkMoveCheckpoint } from '../../store/checkpoint.js';
import { CheckpointUnusableError } from '../../store/errors.js';
import { locateCheckpoint } from '../paths.js';
import type { Precheck, PrecheckInput } from './precheck.js';

const input = (workerData as { input: PrecheckInput }).input;

/** The checkpoint `run` will open, or null when the plan does not say plainly. */
function checkpointFile(): string | null {
  if (input.statePath) return locateCheckpoint({ ...common(), planName: '', planCheckpoint: null }).file;
  const doc = parse(readFileSync(resolve(input.cwd, input.planFile), 'utf8')) as {
    name?: unknown;
    checkpoint?: unknown;
  } | null;
  const name = doc?.name;
  const at = doc?.checkpoint ?? null;
  if (typeof name !== 'string' || (at !== null && typeof at !== 'string')) return null;
  return locateCheckpoint({ ...common(), planName: name, planCheckpoint: at }).file;
}

function common() {
  return {
    planFile: input.planFile,
    statePath: input.statePath,
    role: input.dryRun ? ('dry-run' as const) : ('run' as const),
    cwd: input.cwd,
  };
}

function verdict(): Precheck | null {
  let file: string | null = null;
  try {
    file = checkpointFile();
    if (file === null) return null;
    const there = existsFile(file);
    checkMoveCheckpoint(file);
    return { file, checked: there };
  } catch (err) {
    if (file !== null && err instanceof CheckpointUnusableError)
      return { file, checked: true, problem: err.problem, message: err.message };
    return null;
  }
}

function existsFile(file: string): boolean {
  return statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}

parentPort?.postMessage(verdict());
