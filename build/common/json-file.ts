// A JSON file read for a person to fix: a syntax error names its line and column. jsonc-parser gives
// the positions JSON.parse does not. Apart from json-config.ts (the schema check) so that commands
// that read JSON without a schema (every command starts with the access config's reader) do not
// load TypeBox.
import { readFileSync } from 'node:fs';
import { getNodeValue, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import { InputError } from '../import/input.js';

/** 1-based line of a character offset. */
export const lineAt = (text: string, offset: number) => text.slice(0, offset).split('\n').length;

/** Parses `path` as JSON; a syntax error is an InputError at its line and column. */
export function readJsonFile(path: string, what: string): { value: unknown; text: string; tree: Node } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InputError(
      path,
      null,
      `cannot read the ${what}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    );
  }
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  if (errors.length || !tree) {
    const e = errors[0];
    const line = e ? lineAt(text, e.offset) : 1;
    const column = e ? e.offset - text.lastIndexOf('\n', e.offset - 1) : 1;
    throw new InputError(
      path,
      line,
      `the ${what} is not valid JSON: ${e ? printParseErrorCode(e.error) : 'empty file'} at column ${column}`,
    );
  }
  return { value: getNodeValue(tree), text, tree };
}
