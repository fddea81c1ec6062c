/**
 * Commands printed for the operator to paste (`to continue: shardmove run ...`, `mv -i ...`) put
 * every path and value through one function, so that what is pasted is what was meant.
 */

/**
 * A word for a POSIX shell: as it is when it has only the plainest characters, else single-quoted;
 * one that starts with `-` is written `./-x`, which no command takes for an option (quoting would
 * not help: the command still sees the dash).
 */
export function shellWord(s: string): string {
  const word = s.startsWith('-') ? `./${s}` : s;
  return /^[\w./=:@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
