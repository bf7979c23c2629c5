// Which keys are in which tier, told to WAF: WAF runs before the key gate and cannot read the
// KeyValueStore, so each tier other than the default has a regex pattern set (made by the stack)
// listing its keys' ids, and a per-key rate rule at that tier's per-minute limit. `isoatlas keys
// publish --waf-tier <tier>=<arn>` writes the sets; a key in no set is limited at the default tier's.
import { GetRegexPatternSetCommand, UpdateRegexPatternSetCommand, WAFOptimisticLockException, type WAFV2Client } from '@aws-sdk/client-wafv2';
import type { EdgeKeyRecord } from '../../edge/access/key-registry.js';
import { UsageError } from '../errors.js';
import { MAX_REGEXES_PER_SET, tierPatterns } from '../../edge/cloudfront/tier-patterns.js';

/** A CLOUDFRONT-scope regex pattern set's ARN: its name and id. */
const SET_ARN = /^arn:aws:wafv2:us-east-1:\d{12}:global\/regexpatternset\/([\w-]+)\/([\w-]+)$/;

export function parseTierSets(values: readonly string[]): Map<string, { name: string; id: string; arn: string }> {
  const sets = new Map<string, { name: string; id: string; arn: string }>();
  for (const v of values) {
    const eq = v.indexOf('=');
    const tier = v.slice(0, eq);
    const arn = v.slice(eq + 1);
    const m = SET_ARN.exec(arn);
    if (eq < 1 || !m) throw new UsageError(`--waf-tier takes <tier>=<regex pattern set ARN> (the stack's TierPatternSet outputs), not "${v}"`);
    sets.set(tier, { name: m[1], id: m[2], arn });
  }
  return sets;
}

export interface TierSetResult {
  tier: string;
  keys: number;
  changed: boolean;
}

/** Writes each tier's set: the ids of its keys that are not revoked. */
export async function publishTierSets(client: WAFV2Client, sets: Map<string, { name: string; id: string }>, keys: readonly EdgeKeyRecord[]): Promise<TierSetResult[]> {
  const results: TierSetResult[] = [];
  for (const [tier, set] of sets) {
    const ids = keys.filter((k) => k.tier === tier && !k.revoked_at).map((k) => k.id);
    const patterns = tierPatterns(ids);
    if (patterns.length > MAX_REGEXES_PER_SET) {
      throw new UsageError(`tier ${tier} has ${ids.length} keys, more than one WAF regex pattern set can list (${MAX_REGEXES_PER_SET} patterns); ask AWS for a higher quota or move keys to another tier`);
    }
    for (let attempt = 1; ; attempt++) {
      const current = await client.send(new GetRegexPatternSetCommand({ Name: set.name, Scope: 'CLOUDFRONT', Id: set.id }));
      const now = (current.RegexPatternSet?.RegularExpressionList ?? []).map((r) => r.RegexString);
      if (now.length === patterns.length && now.every((p, i) => p === patterns[i])) {
        results.push({ tier, keys: ids.length, changed: false });
        break;
      }
      try {
        await client.send(
          new UpdateRegexPatternSetCommand({ Name: set.name, Scope: 'CLOUDFRONT', Id: set.id, LockToken: current.LockToken, RegularExpressionList: patterns.map((RegexString) => ({ RegexString })) }),
        );
        results.push({ tier, keys: ids.length, changed: true });
        break;
      } catch (err) {
        if (!(err instanceof WAFOptimisticLockException) || attempt >= 5) throw err;
      }
    }
  }
  return results;
}
