/** Commands printed as hints ("to continue it: shardmove revert ..."), so that they paste into a shell as they are. */

export { shellWord } from '../shared/shell-word.js';
