// How WAF tells a key's tier: a regex pattern set per tier other than the default, listing its keys'
// ids, matched against the Authorization header lowercased. The stack makes the sets and the rules
// (infra/stack.ts); `isoatlas keys publish --waf-tier` fills them (build/keys/waf-tiers.ts).

/** WAF's quotas: characters per regex, regexes per pattern set. */
export const MAX_REGEX_CHARS = 200;
export const MAX_REGEXES_PER_SET = 10;
/** Matched against the Authorization header lowercased (the rule's text transformation). */
const HEAD = '^bearer +isoatlas_(';
const TAIL = ')_';
/** A set must hold a regex; this one matches no header the gate would admit. */
export const NO_KEYS_PATTERN = '^isoatlas-no-keys-in-this-tier$';

/** The regexes matching exactly these key ids, each within WAF's length quota. */
export function tierPatterns(ids: readonly string[]): string[] {
  if (ids.length === 0) return [NO_KEYS_PATTERN];
  const perRegex = Math.floor((MAX_REGEX_CHARS - HEAD.length - TAIL.length + 1) / 9); // 8-character ids and '|'
  const patterns: string[] = [];
  const sorted = [...ids].sort();
  for (let i = 0; i < sorted.length; i += perRegex) patterns.push(`${HEAD}${sorted.slice(i, i + perRegex).join('|')}${TAIL}`);
  return patterns;
}

