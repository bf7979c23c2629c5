// Validates bodies against the contract's JSON Schemas with Ajv (JSON Schema 2020-12, as in OpenAPI 3.1).
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { schemas, type SchemaName } from '../../edge/contract/schemas.js';

const ajv = new Ajv2020.default({ allErrors: true, strict: true });
addFormats.default(ajv);
for (const schema of Object.values(schemas)) ajv.addSchema(schema);

export function validate(name: SchemaName, body: unknown): string[] {
  const check = ajv.getSchema(name)!;
  if (check(body)) return [];
  return (check.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}

/** Which schema a rendered tree file must follow, from its path; null for non-API files. */
export function schemaForTreePath(path: string): SchemaName | null {
  if (path === 'api/v1/release.json') return 'Release';
  if (/^api\/v1\/genes\/[^/]+\.json$/.test(path)) return 'Gene';
  if (/^api\/v1\/genes\/[^/]+\/isoforms\/\d+\.json$/.test(path)) return 'IsoformPage';
  if (/^api\/v1\/isoforms\/[^/]+\/domains\.json$/.test(path)) return 'DomainList';
  if (/^api\/v1\/isoforms\/[^/]+\/neoantigens\.json$/.test(path)) return 'NeoantigenList';
  if (/^api\/v1\/isoforms\/[^/]+\/ptm\.json$/.test(path)) return 'PtmSiteList';
  if (/^api\/v1\/isoforms\/[^/]+\.json$/.test(path)) return 'Isoform';
  return null;
}
