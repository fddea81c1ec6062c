/**
 * `shardmove control PLAN [--state FILE]` for the run being driven, as the operator named its plan
 * and checkpoint: every printed control command (a pause's, the failure breaker's, a hold by room's
 * next step) starts with it, so that what is pasted steers this run and no other. `control` finds
 * the checkpoint as `run` did (the plan's, or `--state` as given), so the words are the run's own.
 */
import { shellWord } from './shell-word.js';

/** How the run was named on its command line: the plan file, and `--state` when one was given. */
export interface RunNamed {
  planFile: string;
  statePath?: string | undefined;
}

/**
 * "shardmove control plans/retire.yaml --state 'my state.db'" (pure); the caller adds the flags.
 * Without the run's names (a checkpoint read alone), the words with a PLAN placeholder.
 */
export function commandOn(verb: 'control' | 'status', run: RunNamed | undefined): string {
  if (!run) return `shardmove ${verb} PLAN`;
  return `shardmove ${verb} ${shellWord(run.planFile)}${run.statePath ? ` --state ${shellWord(run.statePath)}` : ''}`;
}

/** `shardmove control PLAN [--state FILE]` for the run. */
export function controlCommand(run: RunNamed | undefined): string {
  return commandOn('control', run);
}
