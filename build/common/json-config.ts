// A JSON config file read for a person to fix: a syntax error names its line and column (json-file.ts),
// and each field that does not fit the schema is named once, with the line it is on (the line of the
// object that lacks it, for a missing field).
import { findNodeAtLocation, type Node } from 'jsonc-parser';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { InputError } from '../import/input.js';
import { lineAt, readJsonFile } from './json-file.js';

/** Reads a JSON config and checks it against `schema`: each failing field once, with its line. */
export function readJsonConfig<T>(path: string, schema: TSchema, what: string): T {
  const { value, text, tree } = readJsonFile(path, what);
  const seen = new Set<string>();
  const problems: { line: number; text: string }[] = [];
  for (const e of Value.Errors(schema, value)) {
    if (seen.has(e.path)) continue;
    seen.add(e.path);
    const segments = e.path
      .split('/')
      .slice(1)
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s.replace(/~1/g, '/').replace(/~0/g, '~')));
    // The field itself, or (missing) the nearest object that holds it.
    let node: Node | undefined;
    for (let n = segments.length; n >= 0 && !node; n--)
      node = n === 0 ? tree : findNodeAtLocation(tree, segments.slice(0, n));
    const missing = findNodeAtLocation(tree, segments) === undefined;
    problems.push({
      line: lineAt(text, node!.offset),
      text: `line ${lineAt(text, node!.offset)}: ${e.path || '/'} ${missing ? 'is required' : e.message.replace(/^Expected/, 'expected')}`,
    });
    if (problems.length === 5) break;
  }
  if (problems.length)
    throw new InputError(path, problems[0].line, `invalid ${what}: ${problems.map((p) => p.text).join('; ')}`);
  return value as T;
}
