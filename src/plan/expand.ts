/**
 * ${VAR} expansion in plan strings. `$${` writes a literal `${`; any other `$` is kept as is.
 * Variables are read from the environment handed in (never from process.env directly).
 */

/** A reference to a variable inside a string: the name and where `${NAME}` starts in the string. */
export interface VarRef {
  name: string;
  index: number;
}

/** The outcome of expanding one string. */
export interface Expansion {
  value: string;
  /** Every `${NAME}` in the string, in order. */
  refs: VarRef[];
  /** Referenced variables that are not set. */
  missing: VarRef[];
  /** `${` not followed by a valid name and `}` (offset into the string). */
  malformed: number[];
  /** True when the string has no text of its own: only references (and nothing else). */
  onlyRefs: boolean;
}

/** `${NAME}` at lastIndex: a name is letters, digits and _, not starting with a digit. */
const REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/y;

/** Expands `${VAR}` references in `text` from `env`. Pure; never throws. */
export function expandVars(text: string, env: Readonly<Record<string, string | undefined>>): Expansion {
  const refs: VarRef[] = [];
  const missing: VarRef[] = [];
  const malformed: number[] = [];
  let value = '';
  let literal = false;
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      value += '${';
      literal = true;
      i += 3;
      continue;
    }
    if (text.startsWith('${', i)) {
      // Anchored at i: looking for the next `}` instead made every unclosed `${` scan to the end.
      REF.lastIndex = i;
      const name = REF.exec(text)?.[1];
      if (name === undefined) {
        malformed.push(i);
        value += '${';
        literal = true;
        i += 2;
        continue;
      }
      const close = i + 2 + name.length;
      const ref = { name, index: i };
      refs.push(ref);
      const v = Object.prototype.hasOwnProperty.call(env, name) ? env[name] : undefined;
      if (v === undefined) missing.push(ref);
      else value += v;
      i = close + 1;
      continue;
    }
    value += text[i];
    literal = true;
    i += 1;
  }
  return { value, refs, missing, malformed, onlyRefs: refs.length > 0 && !literal };
}
