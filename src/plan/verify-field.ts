/**
 * `verify`: what verification checks after the moves. `true` (the default): every item is where the
 * run put it and nothing of the moved kinds is left on the sources. `false`: no verification.
 * `{content: {sample: 5%}}` (or `sample: all`, or `content: all`): that, and, as VDiff does for
 * Vitess, a content check of a sample of the projects it moves: each sampled project's repository
 * fingerprint (default-branch HEAD, branch and tag counts) is read right before its move is posted
 * and again at verification, and any difference fails that project with both values.
 * `true` and `false` stay booleans in the plan, so plans written before hash as they did.
 */
import type { Node } from 'yaml';
import { isMap, isScalar } from 'yaml';
import type { FieldDoc, JsonSchema } from './field-table.js';
import { boolean } from './fields.js';
import { VAR_STRING } from './json-schema.js';
import type { Reader } from './reader.js';

/** Which share of the moved projects gets the content check (0 < fraction <= 1). */
export interface VerifyContent {
  fraction: number;
}

export type VerifySetting = boolean | { content: VerifyContent };

/** The content check a plan asks for, or null (only where items are). */
export function verifyContentOf(v: VerifySetting): VerifyContent | null {
  return typeof v === 'object' ? v.content : null;
}

/**
 * The sample in words: "every moved project", else "5% of the moved projects" (validate's), or with
 * `asSample` "a 5% sample of the moved projects" (the final summary's).
 */
export function sampleWords(fraction: number, asSample = false): string {
  if (fraction === 1) return 'every moved project';
  const pct = `${+(fraction * 100).toFixed(4)}%`;
  return asSample ? `a ${pct} sample of the moved projects` : `${pct} of the moved projects`;
}

/** Whether the plan verifies at all. */
export function verifies(v: VerifySetting): boolean {
  return v !== false;
}

const PERCENT = /^(\d{1,3}(?:\.\d{1,4})?)%$/;
const EXAMPLE = 'write verify: {content: {sample: 5%}} or {content: {sample: all}}';

/** `all` or a percentage above 0 and at most 100; undefined (reported) otherwise. */
function readSample(r: Reader, node: Node | null, path: string, invalid: Set<string>): number | undefined {
  const bad = (why: string) => {
    r.error(path, r.posOf(node), why);
    invalid.add(path);
    return undefined;
  };
  if (r.isNull(node)) return bad(`is required: ${EXAMPLE}`);
  if (!isScalar(node!) || typeof node.value !== 'string')
    return bad(`expected all or a percentage such as 5% (quote nothing: sample: 5%)`);
  const text = node.value.trim();
  if (text === 'all') return 1;
  const m = PERCENT.exec(text);
  const pct = m ? Number(m[1]) : NaN;
  if (!(pct > 0 && pct <= 100))
    return bad(`expected all or a percentage above 0% and at most 100%, not ${JSON.stringify(text)}`);
  return pct / 100;
}

/** Reads `verify`: a boolean, or `{content: ...}`. Problems are reported at their node. */
export function readVerify(r: Reader, node: Node, path: string, invalid: Set<string>): VerifySetting {
  if (!isMap(node)) return boolean(r, node, path, true, invalid);
  r.mark(path, r.posOf(node));
  const m = r.map(node, path, ['content']);
  const content = m?.get('content')?.value ?? null;
  if (!m || r.isNull(content)) {
    if (m) r.error(`${path}.content`, r.posOf(node), `is required: ${EXAMPLE}`);
    invalid.add(path);
    return true;
  }
  let fraction: number | undefined;
  if (isScalar(content) && content.value === 'all') fraction = 1;
  else {
    const keys = r.map(content, `${path}.content`, ['sample']);
    if (!keys) {
      invalid.add(path);
      return true;
    }
    fraction = readSample(r, keys.get('sample')?.value ?? null, `${path}.content.sample`, invalid);
  }
  return fraction === undefined ? true : { content: { fraction } };
}

const SAMPLE_SCHEMA: JsonSchema = { type: 'string', pattern: '^\\s*(all|\\d{1,3}(\\.\\d{1,4})?%)\\s*$' };

export const VERIFY_SCHEMA: JsonSchema = {
  anyOf: [
    { type: 'boolean' },
    VAR_STRING,
    {
      type: 'object',
      properties: {
        content: {
          anyOf: [
            { const: 'all' },
            {
              type: 'object',
              properties: { sample: SAMPLE_SCHEMA },
              required: ['sample'],
              additionalProperties: false,
            },
          ],
        },
      },
      required: ['content'],
      additionalProperties: false,
    },
  ],
};

export const VERIFY_DOC: FieldDoc = {
  type: 'boolean or mapping',
  default: '`true`',
  allowed: '`true`, `false`, or `{content: {sample: 5%}}` (`sample: all`, or `content: all`)',
  more: 'With `content`, the share of the moved projects (chosen by id, the same on every resume) whose repository fingerprint (default-branch HEAD, branch and tag counts) is read right before the move and compared at verification. See [content verification](operations.md#content-verification).',
};
