// The key gate's deployable source: key-gate-function.js with its settings filled in. The settings are the
// arrangement and the tiers the day meter counts; everything per key lives in the KeyValueStore.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tierLimits, type AccessConfig, type AccessMode } from '../access/config.js';

export const KEY_GATE_FILE = join(dirname(fileURLToPath(import.meta.url)), 'key-gate-function.js');
/** CloudFront's limit on a function's code. */
export const KEY_GATE_MAX_BYTES = 10 * 1024;

export interface KeyGateSettings {
  mode: AccessMode;
  /** Tiers with a day limit: the gate logs their requests for the meter. */
  metered: string[];
}

export function keyGateSettings(config: AccessConfig): KeyGateSettings {
  const tiers = config.mode === 'open' ? config.open.tiers : config.key_required.tiers;
  return { mode: config.mode, metered: Object.keys(tiers).filter((t) => tierLimits(config, t).per_day !== undefined) };
}

export function keyGateCode(settings: KeyGateSettings): string {
  const source = readFileSync(KEY_GATE_FILE, 'utf8');
  const parts = source.split('__SETTINGS__');
  if (parts.length !== 3) throw new Error(`${KEY_GATE_FILE} must name __SETTINGS__ once in its comment and once in code`);
  const code = parts[0] + '__SETTINGS__' + parts[1] + JSON.stringify(settings) + parts[2];
  const bytes = Buffer.byteLength(code);
  if (bytes > KEY_GATE_MAX_BYTES) throw new Error(`the key gate is ${bytes} bytes, over CloudFront's ${KEY_GATE_MAX_BYTES}-byte limit on function code`);
  return code;
}
