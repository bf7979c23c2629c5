// One key, one count. WAF counts per key on the Authorization header, before the gate runs, so every
// spelling the gate admits must be the same aggregation value under the per-key rules' text
// transformations, and fall under the rule of the key's tier. Here the gate's real source (in the
// CloudFront Function harness) and the local server's parser meet a list of spellings; the admitted
// ones are then run through the synthesized template's WAF rules by a small evaluator. So are requests
// that carry a key among other headers, within and past what CloudFront hands WAF: none the gate
// admits escapes its key's count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueKey, loadRegistry, readSecret } from '../build/keys/registry.js';
import { resolveAccessConfig, type AccessMode } from '../edge/access/config.js';
import { AccessControl } from '../edge/access/control.js';
import { bearerToken, importServerSecret } from '../edge/access/key-format.js';
import { MemoryQuotaStore } from '../edge/access/stores/memory.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { kvsEntries } from '../edge/cloudfront/kvs-layout.js';
import { synthesizeCdnTemplates } from './helpers/cdn-synth.js';
import { loadCloudFrontFunction, viewerRequest } from './helpers/cloudfront-function.js';
import { aggregationKey, evaluateWebAcl, forwardedToWaf, matches, whole, type WafRequest } from './helpers/waf-eval.js';
import { headerShapes } from './helpers/header-shapes.js';
import type { HeaderField } from '../edge/contract/header-limits.js';

let work: string;
let keysDir: string;
const keys: Record<'plus' | 'standard' | 'legacyPlus', { key: string; id: string }> = {} as never;
let templates: Map<string, any>;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-spelling-'));
  keysDir = join(work, 'keys');
  const issue = async (tier: string, letter?: null) => {
    const { key, record } = await issueKey(keysDir, {
      name: 'T',
      affiliation: 'T',
      use: 'spelling tests',
      tier,
      letter,
    });
    return { key, id: record.id };
  };
  keys.plus = await issue('plus');
  keys.standard = await issue('standard');
  keys.legacyPlus = await issue('plus', null); // issued before tiers had letters
  const synthesized = await synthesizeCdnTemplates({
    outDir: join(work, 'cdn'),
    bucketName: 'isoatlas-spelling',
    stacks: { 'Spelling-open': 'open', 'Spelling-key-required': 'key-required' },
  });
  templates = new Map((['open', 'key-required'] as const).map((mode) => [mode, synthesized.get(`Spelling-${mode}`)]));
});

afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Ways to send a key: one value, or a header sent more than once. */
function spellings(key: string): (string | string[])[] {
  return [
    `Bearer ${key}`,
    `bearer ${key}`,
    `BEARER ${key}`,
    `bEaReR ${key}`,
    `Bearer  ${key}`,
    `Bearer   ${key}`,
    `Bearer ${key} `,
    `Bearer ${key}  `,
    ` Bearer ${key}`,
    `  bearer ${key}`,
    `Bearer\t${key}`,
    `Bearer ${key}\t`,
    `Bearer \t${key}`,
    `Bearer\u00a0${key}`,
    `Bearer ${key} extra`,
    `Bearer ${key},`,
    `Bearer "${key}"`,
    `Bearer${key}`,
    `Bearer ${key.toUpperCase()}`,
    `Token ${key}`,
    `Basic ${Buffer.from(`x:${key}`).toString('base64')}`,
    key,
    [`Bearer ${key}`, `Bearer ${key}`],
    [`Bearer ${key}`, `bearer ${key}`],
  ];
}

const GATE_CONFIG = (mode: AccessMode) => resolveAccessConfig({}, mode);
const store = () => kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!);

/** The spellings the gate lets through. */
async function gateAdmits(mode: AccessMode, key: string): Promise<(string | string[])[]> {
  const gate = loadCloudFrontFunction(keyGateCode(keyGateSettings(GATE_CONFIG(mode))), store());
  const admitted: (string | string[])[] = [];
  for (const s of spellings(key)) {
    const out = await gate.handler(viewerRequest({ authorization: s }));
    if (out.statusCode === undefined) admitted.push(s);
    else {
      expect(out.statusCode, JSON.stringify(s)).toBe(401);
      expect(out.headers['content-type'].value).toBe('application/problem+json');
      // A refusal says what to send.
      expect(JSON.parse(out.body.data).detail, JSON.stringify(s)).toMatch(
        /Authorization: Bearer <key>|Authorization header|malformed or unknown/,
      );
    }
  }
  return admitted;
}

const headersOf = (s: string | string[]): WafRequest => whole({ authorization: typeof s === 'string' ? [s] : s });
const perKeyRules = (template: any) =>
  (Object.values(template.Resources).find((r: any) => r.Type === 'AWS::WAFv2::WebACL') as any).Properties.Rules.filter(
    (r: any) => r.Statement.RateBasedStatement?.AggregateKeyType === 'CUSTOM_KEYS',
  );
const webAclRules = (template: any): any[] =>
  (Object.values(template.Resources).find((r: any) => r.Type === 'AWS::WAFv2::WebACL') as any).Properties.Rules;
const ruleNamed = (template: any, name: string) => webAclRules(template).find((r: any) => r.Name === name);

describe("the gate and the local server admit the same single spelling of a key, up to the scheme's case", () => {
  for (const mode of ['open', 'key-required'] as const) {
    it(`${mode}: the gate admits "Bearer" in any case, one space, the key; nothing else`, async () => {
      for (const which of ['plus', 'standard', 'legacyPlus'] as const) {
        const { key } = keys[which];
        const admitted = await gateAdmits(mode, key);
        expect(admitted, which).toEqual([`Bearer ${key}`, `bearer ${key}`, `BEARER ${key}`, `bEaReR ${key}`]);
      }
    });
  }

  it("the server's parser gives the key for exactly the spellings the gate admits", async () => {
    const { key } = keys.plus;
    const admitted = await gateAdmits('key-required', key);
    const parsed = spellings(key).filter(
      (s) => typeof s === 'string' && (bearerToken(s) as { token?: string }).token === key,
    );
    expect(parsed).toEqual(admitted);
  });

  it('the server as a whole admits exactly those of the spellings that reach it as sent', async () => {
    const config = resolveAccessConfig({}, 'key-required');
    const registry = {
      description: 'registry',
      lookup: async (id: string) => loadRegistry(keysDir).keys.find((k) => k.id === id) ?? null,
    };
    const access = new AccessControl({
      config,
      store: new MemoryQuotaStore(),
      keys: registry,
      secret: await importServerSecret(readSecret(keysDir, { create: false })!),
    });
    const { key } = keys.plus;
    const admitted = await gateAdmits('key-required', key);
    let reached = 0;
    for (const s of spellings(key)) {
      const headers = new Headers();
      for (const v of typeof s === 'string' ? [s] : s) headers.append('authorization', v);
      // HTTP strips whitespace around a field value (RFC 9110 §5.5) and joins repeated fields: such a
      // spelling reaches the server as another value (and the gate refuses it if it sees it).
      if (typeof s === 'string' && headers.get('authorization') !== s) continue;
      reached++;
      const decision = await access.decide(new Request('http://x/api/v1/release', { headers }), '192.0.2.9');
      expect(decision.denied === null, JSON.stringify(s)).toBe(admitted.includes(s));
    }
    expect(reached).toBeGreaterThan(admitted.length + 10);
  });
});

describe("every admitted spelling of a key is one WAF count, under its tier's rule", () => {
  for (const mode of ['open', 'key-required'] as const) {
    it(`${mode}: one aggregation value per key, distinct between keys, and the tier rule its id names`, async () => {
      const template = templates.get(mode);
      const rules = perKeyRules(template);
      expect(rules.length).toBe(2); // the default tier's and plus's
      const config = GATE_CONFIG(mode);
      const plusRule = `isoatlas-rate-per-key-plus`;
      const expectedRule = {
        plus: plusRule,
        standard: 'isoatlas-rate-per-key',
        legacyPlus: 'isoatlas-rate-per-key',
      } as const;
      const valuesByKey = new Map<string, Set<string>>();
      for (const which of ['plus', 'standard', 'legacyPlus'] as const) {
        const admitted = await gateAdmits(mode, keys[which].key);
        const values = new Set<string>();
        for (const s of admitted) {
          const counted = rules
            .map((r: any) => [r.Name, aggregationKey(r.Statement.RateBasedStatement, headersOf(s))])
            .filter(([, v]: any) => v !== null);
          // Exactly one per-key rule counts it: its tier's (legacy ids: the default tier's).
          expect(
            counted.map(([name]: any) => name),
            `${which} ${s}`,
          ).toEqual([expectedRule[which]]);
          values.add(counted[0][1]);
        }
        expect([...values], which).toHaveLength(1);
        valuesByKey.set(which, values);
      }
      const all = [...valuesByKey.values()].map((v) => [...v][0]);
      expect(new Set(all).size).toBe(all.length);
      expect(config.tier_letters.plus).toBe(keys.plus.id[0]);
    });
  }

  it('the check can fail: without the lowercase transformation the admitted spellings are four counts', async () => {
    const rule = ruleNamed(templates.get('open'), 'isoatlas-rate-per-key-plus').Statement.RateBasedStatement;
    const raw = {
      ...rule,
      CustomKeys: [{ Header: { Name: 'authorization', TextTransformations: [{ Priority: 0, Type: 'NONE' }] } }],
    };
    const admitted = await gateAdmits('open', keys.plus.key);
    expect(new Set(admitted.map((s) => aggregationKey(raw, headersOf(s)))).size).toBe(4);
  });

  it('open: keyed requests have an address ceiling of their own, anonymous ones the anonymous rule', () => {
    const template = templates.get('open');
    const keyed = ruleNamed(template, 'isoatlas-keyed-per-ip').Statement.RateBasedStatement;
    const anonymous = ruleNamed(template, 'isoatlas-anonymous-per-ip').Statement.RateBasedStatement;
    const config = GATE_CONFIG('open');
    expect(keyed.Limit).toBe(config.open.keyed_per_ip.per_minute);
    expect(keyed.Limit).toBe(2 * Math.max(...Object.values(config.open.tiers).map((t) => t.per_minute!)));
    for (const s of [
      `Bearer ${keys.plus.key}`,
      `bearer ${keys.standard.key}`,
      `Bearer  ${keys.legacyPlus.key}`,
      'Basic eDp5',
    ]) {
      expect(aggregationKey(keyed, headersOf(s)), s).toBe('ip:198.51.100.7');
      expect(aggregationKey(anonymous, headersOf(s)), s).toBeNull();
    }
    expect(aggregationKey(keyed, whole({}))).toBeNull();
    expect(aggregationKey(anonymous, whole({}))).toBe('ip:198.51.100.7');
    expect(ruleNamed(templates.get('key-required'), 'isoatlas-keyed-per-ip')).toBeUndefined();
  });

  it("a tier's regex is fixed: it names no key, and matches any number of its keys but no other tier's or legacy ids", async () => {
    const template = templates.get('key-required');
    const plus = ruleNamed(template, 'isoatlas-rate-per-key-plus').Statement.RateBasedStatement.ScopeDownStatement;
    expect(plus.RegexMatchStatement.RegexString).not.toContain(keys.plus.id);
    expect(JSON.stringify(template)).not.toContain('RegexPatternSet');
    const more = await Promise.all(
      Array.from({ length: 20 }, () => issueKey(keysDir, { name: 'M', affiliation: 'M', use: 'many', tier: 'plus' })),
    );
    for (const { key } of more) expect(matches(plus, headersOf(`Bearer ${key}`))).toBe(true);
    expect(matches(plus, headersOf(`Bearer ${keys.standard.key}`))).toBe(false);
    expect(matches(plus, headersOf(`Bearer ${keys.legacyPlus.key}`))).toBe(false);
  });
});

describe("no request shape outruns its key's bucket", () => {
  const OVERSIZE = 'isoatlas-oversize-headers';
  const HOST: HeaderField = ['host', 'd111111abcdef8.cloudfront.net'];
  /** The per-key counts among a request's counts (rule name: aggregation instance). */
  const perKey = (rules: any[], counted: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(counted).filter(
        ([name]) => rules.find((r) => r.Name === name).Statement.RateBasedStatement.AggregateKeyType === 'CUSTOM_KEYS',
      ),
    );
  /** A key's bucket: where the per-key rules count it sent alone. */
  const bucketOf = (rules: any[], authorization: string) =>
    perKey(rules, evaluateWebAcl(rules, whole({ host: [HOST[1]], authorization: [authorization] })).counted);
  const shapeNamed = (authorization: string, label: RegExp) =>
    headerShapes([HOST], authorization).find((s) => label.test(s.label))!;

  for (const mode of ['open', 'key-required'] as const) {
    it(`${mode}: the gate admits every shape; WAF blocks each past a bound before any rate rule, and counts each within them in its key's bucket`, async () => {
      const rules = webAclRules(templates.get(mode));
      const gate = loadCloudFrontFunction(keyGateCode(keyGateSettings(GATE_CONFIG(mode))), store());
      let blocked = 0;
      for (const which of ['plus', 'standard'] as const) {
        const authorization = `Bearer ${keys[which].key}`;
        const bucket = bucketOf(rules, authorization);
        expect(Object.keys(bucket), which).toHaveLength(1);
        for (const shape of headerShapes([HOST], authorization)) {
          const what = `${which}: ${shape.label}`;
          const others = shape.fields.filter(([name]) => name !== 'host' && name !== 'authorization');
          // The gate sees every header (CloudFront hands a function all of them): it admits the key.
          const out = await gate.handler(viewerRequest({ authorization, headers: Object.fromEntries(others) }));
          expect(out.statusCode, what).toBeUndefined();
          const waf = evaluateWebAcl(rules, forwardedToWaf(shape.fields));
          expect(waf.blockedBy, what).toBe(shape.over ? OVERSIZE : null);
          // Blocked: before any rate rule counted it. Let through: counted in its key's bucket.
          if (waf.blockedBy) blocked++;
          expect(waf.blockedBy ? waf.counted : perKey(rules, waf.counted), what).toEqual(waf.blockedBy ? {} : bucket);
        }
      }
      expect(blocked).toBe(2 * headerShapes([HOST], 'Bearer x').filter((s) => s.over).length);
    });
  }

  it("the check can fail: without the rule, or with oversize handling other than MATCH, the issue's request is counted per address only, and a key cut by the bound in a bucket of its own", () => {
    for (const mode of ['open', 'key-required'] as const) {
      const rules = webAclRules(templates.get(mode));
      const handled = (handling: string) =>
        rules.map((r) =>
          r.Name !== OVERSIZE ? r : structuredClone({ ...r, Statement: withHandling(r.Statement, handling) }),
        );
      const variants = {
        'without the rule': rules.filter((r) => r.Name !== OVERSIZE),
        CONTINUE: handled('CONTINUE'),
        NO_MATCH: handled('NO_MATCH'),
      };
      for (const [variant, acl] of Object.entries(variants))
        for (const which of ['plus', 'standard'] as const) {
          const authorization = `Bearer ${keys[which].key}`;
          const what = `${mode}, ${variant}, ${which}`;
          const issue = evaluateWebAcl(acl, forwardedToWaf(shapeNamed(authorization, /the issue/).fields));
          expect(issue.blockedBy, what).toBeNull();
          expect(perKey(rules, issue.counted), what).toEqual({});
          const byAddress = Object.keys(issue.counted);
          expect(byAddress.length, what).toBeGreaterThan(0);
          for (const name of byAddress)
            expect(rules.find((r) => r.Name === name).Statement.RateBasedStatement.AggregateKeyType, what).toBe('IP');
          const cut = evaluateWebAcl(acl, forwardedToWaf(shapeNamed(authorization, /inside the key/).fields));
          const counted = perKey(rules, cut.counted);
          expect(Object.keys(counted), what).toEqual(Object.keys(bucketOf(rules, authorization)));
          expect(counted, what).not.toEqual(bucketOf(rules, authorization));
        }
    }
  });
});

/** The oversize rule's statement with another oversize handling. */
function withHandling(statement: any, handling: string): any {
  const size = statement.SizeConstraintStatement;
  return {
    SizeConstraintStatement: {
      ...size,
      FieldToMatch: { Headers: { ...size.FieldToMatch.Headers, OversizeHandling: handling } },
    },
  };
}
