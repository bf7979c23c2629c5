// The viewer gate's deployable source: key-gate-function.js with its settings filled in. The settings
// are the arrangement (or none: the gate then only pins the release), the tiers the day meter counts,
// each tier's key-id letter, the API's path prefix, the release query parameters and the preflight
// answer's headers (the contract's CORS values); the current release and everything per key live in
// the KeyValueStore.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tierLimits, type AccessConfig, type AccessMode } from '../access/config.js';
import { API_PREFIX } from '../contract/tree.js';
import { PREFLIGHT_HEADERS } from '../contract/http-headers.js';
import { DEFAULT_RELEASE_PARAM, RELEASE_PARAM } from '../contract/routes.js';

export const KEY_GATE_FILE = join(dirname(fileURLToPath(import.meta.url)), 'key-gate-function.js');
/** CloudFront's limit on a function's code. */
export const KEY_GATE_MAX_BYTES = 10 * 1024;

export interface KeyGateSettings {
  mode: AccessMode | 'none';
  /** Tiers with a day limit: the gate logs their requests for the meter. */
  metered: string[];
  /** Tier → the letter its keys' ids start with: a lettered key whose letter is not its record's
   * tier's is refused (WAF would count it under another tier). */
  letters: Record<string, string>;
  /** Requests below this path are API requests, answered from a release. */
  api: string;
  /** The query parameters naming a release: the viewer's (`named`, left as it is) and the one the
   * gate adds with the current release when the request names neither (`current`). */
  release: { named: string; current: string };
  /** The headers of the gate's answer to a preflight: the contract's, as the edge handler sends. */
  preflight: Record<string, string>;
}

/** The settings of an arrangement, or of none (no keys: the gate only pins the release). */
export function keyGateSettings(config: AccessConfig | null): KeyGateSettings {
  const common = {
    api: `${API_PREFIX}/`,
    release: { named: RELEASE_PARAM, current: DEFAULT_RELEASE_PARAM },
    preflight: PREFLIGHT_HEADERS,
  };
  if (!config) return { mode: 'none', metered: [], letters: {}, ...common };
  const tiers = config.mode === 'open' ? config.open.tiers : config.key_required.tiers;
  const metered = Object.keys(tiers).filter((t) => tierLimits(config, t).per_day !== undefined);
  return { mode: config.mode, metered, letters: config.tier_letters, ...common };
}

export function keyGateCode(settings: KeyGateSettings): string {
  const source = readFileSync(KEY_GATE_FILE, 'utf8');
  const parts = source.split('__SETTINGS__');
  if (parts.length !== 3)
    throw new Error(`${KEY_GATE_FILE} must name __SETTINGS__ once in its comment and once in code`);
  const code = parts[0] + '__SETTINGS__' + parts[1] + JSON.stringify(settings) + parts[2];
  const bytes = Buffer.byteLength(code);
  if (bytes > KEY_GATE_MAX_BYTES)
    throw new Error(
      `the key gate is ${bytes} bytes, over CloudFront's ${KEY_GATE_MAX_BYTES}-byte limit on function code`,
    );
  return code;
}
