/** Commands printed as hints ("to continue it: shardmove revert ..."), so that they paste into a shell as they are. */

/** A word for a POSIX shell: as it is when safe, else single-quoted; a leading dash cannot pass for an option. */
export function shellWord(s: string): string {
  const word = s.startsWith('-') ? `./${s}` : s;
  return /^[\w./=:@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
