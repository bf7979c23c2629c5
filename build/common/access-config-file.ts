// The access config (tiers and limits) a server or `keys` reads: JSON, checked by the edge's resolver.
import { resolveAccessConfig, type AccessConfig } from '../../edge/access/config.js';
import { readJsonFile } from './json-file.js';

export function readAccessConfigFile(path: string | undefined, mode?: AccessConfig['mode']): AccessConfig {
  if (!path) return resolveAccessConfig({}, mode);
  return resolveAccessConfig(readJsonFile(path, 'access config').value, mode);
}
