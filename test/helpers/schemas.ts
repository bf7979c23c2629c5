// Validates bodies against the contract's JSON Schemas with Ajv (JSON Schema 2020-12, as in OpenAPI 3.1).
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { schemas, type SchemaName } from '../../edge/contract/schemas.js';
import { routesOfTreeFile } from '../../edge/contract/tree.js';

const ajv = new Ajv2020.default({ allErrors: true, strict: true });
addFormats.default(ajv);
for (const schema of Object.values(schemas)) ajv.addSchema(schema);

export function validate(name: SchemaName, body: unknown): string[] {
  const check = ajv.getSchema(name)!;
  if (check(body)) return [];
  return (check.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}

/** Which schema a rendered tree file must follow, from its path: the schema of the route it answers
 * (from the route table); null for files that answer none. */
export function schemaForTreePath(path: string): SchemaName | null {
  return routesOfTreeFile(path)[0]?.route.schema ?? null;
}
