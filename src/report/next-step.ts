/**
 * What an operator can do about what holds the run, in the same words in `status` and under the
 * progress line's note: the run's own control command, complete (its plan and `--state` as they
 * were named), so that the printed line can be pasted as it is. Null when the hold ends by itself
 * (a window, a rule or the throttle) and nothing needs doing. Pure.
 */
import type { Hold } from '../events/hold.js';
import { CAPACITY_RULE, roomNextStep } from '../events/room-words.js';
import { controlCommand } from '../shared/control-command.js';
import type { RunNamed } from '../shared/control-command.js';

/** `cap`: the cap the run recorded last (the room's rule names its storage). */
export function holdNextStep(hold: Hold, cap: { rule?: string } | null, named: RunNamed | undefined): string | null {
  const control = controlCommand(named);
  switch (hold.by) {
    case 'breaker':
      return `"Failed moves" in status lists what it counted; \`${control} --unpause\` goes on`;
    case 'control':
      return hold.stopped ? `\`${control} --unpause\` goes on` : null;
    case 'capacity': {
      const storage = cap?.rule?.startsWith(CAPACITY_RULE) ? cap.rule.slice(CAPACITY_RULE.length) : null;
      return storage ? roomNextStep(storage, control) : null;
    }
    default:
      return null;
  }
}
