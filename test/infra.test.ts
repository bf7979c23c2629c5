// The CDN stack (infra/stack.ts) as CloudFormation: synthesized in-process from a real edge bundle
// and checked resource by resource, plus `npm run synth` (infra/app.ts) run as a child process.
// Everything is offline: no AWS account, no lookups.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Stack, Template, wafv2 } from '../infra/cdk.js';
import { bundleEdge, bundleMeter } from '../build/bundle/edge.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { KEY_GATE_MAX_BYTES, keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { KVS_SIZE_LIMIT_BYTES, KVS_WARN_FRACTION } from '../edge/cloudfront/kvs-capacity.js';
import { KEY_STORE_METRICS } from '../edge/cloudfront/key-store-metrics.js';
import { routes } from '../edge/contract/routes.js';
import { createHandler } from '../edge/handler.js';
import { SYNTH_NODE_FLAGS } from './helpers/cdn-synth.js';
import { run } from './helpers/run.js';
import { validate } from './helpers/schemas.js';
import { OpenAPIBackend } from 'openapi-backend';
import addFormats from 'ajv-formats';
import { buildOpenApi } from '../edge/contract/openapi.js';
import { HEADER_LIMITS, HEADER_LIMITS_DETAIL } from '../edge/contract/header-limits.js';
import { IsoatlasBucketStack } from '../infra/bucket.js';
import {
  ACCESS_WINDOW_SECONDS,
  IsoatlasCdnStack,
  KEYS_OVER_OLD_TLS,
  SYNTH_CONTEXT,
  WAF_WINDOW_SECONDS,
  edgeBundleConfig,
  type IsoatlasAccessProps,
  type IsoatlasCdnProps,
} from '../infra/stack.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
/** AWS's cfn-lint, where it is installed (these machines have it); its test is skipped, saying so, where not.
 * Found on PATH, not run: starting it costs seconds, and an installation that does not run fails its test. */
const CFN_LINT = (process.env.PATH ?? '').split(delimiter).some((dir) => {
  try {
    accessSync(join(dir, 'cfn-lint'), constants.X_OK);
    return true;
  } catch {
    return false;
  }
});
if (!CFN_LINT) console.log('cfn-lint is not installed: the templates are not linted (pip install cfn-lint)');
const BUCKET = 'isoatlas-test-bucket';
let ACCESS: IsoatlasAccessProps;

type Resource = {
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
type Resources = Record<string, Resource>;

let work: string;
let plainBundle: string; // the origin-request function's bundle
let meterBundle: string; // the day meter's

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-infra-'));
  plainBundle = join(work, 'edge-plain');
  meterBundle = join(work, 'meter');
  await bundleEdge({ outDir: plainBundle, ...edgeBundleConfig({ bucketName: BUCKET }) });
  await bundleMeter({ outDir: meterBundle });
  ACCESS = { mode: 'key-required', meterCodeDir: meterBundle };
});

afterAll(() => rmSync(work, { recursive: true, force: true }));
// A synthesis holds the event loop; the worker answers vitest between them, so that synchronous
// tests run back to back do not add up to a stretch past vitest's RPC timeout (vitest#8164).
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
beforeEach(yieldToLoop);

type Synthesis = { stack: IsoatlasCdnStack; template: Template; resources: Resources };
const syntheses = new Map<string, Synthesis>();

const deepFreeze = (value: unknown): void => {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
};

/** One synthesis per arrangement, shared by the tests that read it: a synthesis is the costly part
 * of most tests here, and many ask for the same props. Frozen, so a test that changed what it was
 * given would fail instead of changing what the next one reads. A refused arrangement is not kept. */
function synth(props: Partial<IsoatlasCdnProps> = {}): Synthesis {
  const key = JSON.stringify(props);
  const known = syntheses.get(key);
  if (known) return known;
  const app = new App({ outdir: mkdtempSync(join(work, 'out-')), context: SYNTH_CONTEXT });
  const stack = new IsoatlasCdnStack(app, 'Test', {
    bucketName: BUCKET,
    edgeCodeDir: plainBundle,
    ...props,
  });
  const template = Template.fromStack(stack);
  deepFreeze(template.toJSON());
  const made = { stack, template, resources: template.toJSON().Resources as Resources };
  syntheses.set(key, made);
  return made;
}

let euBundle: Promise<string> | undefined;
/** The edge bundle for a bucket in eu-west-1, built once for the tests that stack it. */
function regionalBundle(): Promise<string> {
  euBundle ??= (async () => {
    const dir = join(work, 'edge-eu');
    await bundleEdge({ outDir: dir, ...edgeBundleConfig({ bucketName: BUCKET, bucketRegion: 'eu-west-1' }) });
    return dir;
  })();
  return euBundle;
}

const ofType = (resources: Resources, type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const only = (resources: Resources, type: string): [string, Resource] => {
  const found = ofType(resources, type);
  expect(found, type).toHaveLength(1);
  return found[0];
};
/** The bucket that holds the atlas (the other one holds CloudFront's logs), and its policy. */
const dataBucket = (resources: Resources): [string, Resource] => {
  const found = ofType(resources, 'AWS::S3::Bucket').filter(([, r]) => r.Properties.BucketName !== undefined);
  expect(found, 'data bucket').toHaveLength(1);
  return found[0];
};
const dataBucketPolicy = (resources: Resources): [string, Resource] => {
  const [id] = dataBucket(resources);
  const found = ofType(resources, 'AWS::S3::BucketPolicy').filter(([, r]) => r.Properties.Bucket?.Ref === id);
  expect(found, 'data bucket policy').toHaveLength(1);
  return found[0];
};
const config = (resources: Resources) =>
  only(resources, 'AWS::CloudFront::Distribution')[1].Properties.DistributionConfig;
const behaviour = (resources: Resources, pattern: string) => {
  const b = config(resources).CacheBehaviors.find((c: any) => c.PathPattern === pattern);
  expect(b, pattern).toBeDefined();
  return b;
};
const byRef = (resources: Resources, ref: { Ref: string }) => {
  const r = resources[ref.Ref];
  expect(r, JSON.stringify(ref)).toBeDefined();
  return r;
};
/** The Lambda function behind an association (Version → Function). */
function associatedFunction(resources: Resources, association: any): Resource {
  const version = byRef(resources, association.LambdaFunctionARN);
  expect(version.Type).toBe('AWS::Lambda::Version');
  const fn = byRef(resources, version.Properties.FunctionName);
  expect(fn.Type).toBe('AWS::Lambda::Function');
  return fn;
}
function functionWithHandler(resources: Resources, handler: string): Resource {
  const fns = ofType(resources, 'AWS::Lambda::Function').filter(([, r]) => r.Properties.Handler === handler);
  expect(fns, handler).toHaveLength(1);
  return fns[0][1];
}
/** Every statement of the inline policies attached to a function's role. */
function roleStatements(resources: Resources, fn: Resource): any[] {
  const roleId = fn.Properties.Role['Fn::GetAtt'][0];
  return ofType(resources, 'AWS::IAM::Policy')
    .filter(([, p]) => p.Properties.Roles.some((r: any) => r.Ref === roleId))
    .flatMap(([, p]) => p.Properties.PolicyDocument.Statement);
}
const asList = <T>(v: T | T[]) => (Array.isArray(v) ? v : [v]);

describe('CloudFormation validation', () => {
  // Every synth here runs with SYNTH_CONTEXT, so any arrangement with a finding fails its own tests;
  // this proves the context does turn findings into errors, so it cannot quietly stop doing so.
  it('fails a synth on a finding: a WAF description with parentheses (F3031)', () => {
    const app = new App({ outdir: mkdtempSync(join(work, 'out-')), context: SYNTH_CONTEXT });
    const stack = new Stack(app, 'Invalid', { env: { account: '111111111111', region: 'us-east-1' } });
    new wafv2.CfnRegexPatternSet(stack, 'Keys', {
      scope: 'CLOUDFRONT',
      description: 'keys (of a tier)',
      regularExpressionList: ['^x$'],
    });
    expect(() => app.synth()).toThrow(/F3031/);
    // The same stack without the context synthesizes: the failure above is the flag's doing.
    const lenient = new App({ outdir: mkdtempSync(join(work, 'out-')) });
    const same = new Stack(lenient, 'Invalid', { env: { account: '111111111111', region: 'us-east-1' } });
    new wafv2.CfnRegexPatternSet(same, 'Keys', {
      scope: 'CLOUDFRONT',
      description: 'keys (of a tier)',
      regularExpressionList: ['^x$'],
    });
    expect(() => lenient.synth()).not.toThrow();
  });

  it('passes every arrangement: none, A, B, and B with the bucket in another region and a custom domain', async () => {
    for (const props of [{}, { access: { mode: 'open' as const } }, { access: ACCESS }]) {
      await yieldToLoop();
      const { template } = synth(props);
      expect(Object.keys(template.toJSON().Resources).length).toBeGreaterThan(0);
    }
    const regional = await regionalBundle();
    const app = new App({ outdir: mkdtempSync(join(work, 'out-')), context: SYNTH_CONTEXT });
    const cdn = new IsoatlasCdnStack(app, 'Cdn', {
      bucketName: BUCKET,
      bucketRegion: 'eu-west-1',
      edgeCodeDir: regional,
      access: ACCESS,
      customDomain: {
        names: ['atlas.example.org'],
        certificateArn: 'arn:aws:acm:us-east-1:111111111111:certificate/12345678-1234-1234-1234-123456789012',
      },
    });
    new IsoatlasBucketStack(app, 'Bucket', {
      bucketName: BUCKET,
      distributionArn: cdn.distribution.distributionArn,
      env: { account: '111111111111', region: 'eu-west-1' },
    });
    // A finding in either stack would throw here.
    const assembly = app.synth();
    expect(Object.keys(assembly.getStackByName('Bucket').template.Resources)).not.toHaveLength(0);
    expect(assembly.getStackByName('Cdn').messages.filter((m) => m.level !== 'info')).toEqual([]);
  });

  it.skipIf(!CFN_LINT)(
    "passes AWS's cfn-lint with no error in every arrangement: none, A, B, and B with WAF logs",
    async () => {
      const arrangements = { none: {}, A: { access: { mode: 'open' as const } }, B: { access: ACCESS } };
      const files = Object.entries({ ...arrangements, 'B-waf-logs': { access: { ...ACCESS, wafLogs: true } } }).map(
        ([name, props]) => {
          const file = join(work, `cfn-lint-${name}.template.json`);
          writeFileSync(file, JSON.stringify(synth(props).template.toJSON()));
          return file;
        },
      );
      // Exit 2 is an error, 4 a warning, 8 informational (their sum when several); the JSON lists each.
      const linted = await run('cfn-lint', ['--format', 'json', ...files]);
      expect(linted.stderr).toBe('');
      const findings = JSON.parse(linted.stdout) as { Level: string; Filename: string; Message: string }[];
      const errors = findings.filter((f) => f.Level === 'Error').map((f) => `${f.Filename}: ${f.Message}`);
      expect(errors).toEqual([]);
      expect(linted.status! & 2).toBe(0);
    },
    120_000,
  );

  it('passes a tier of any name: its rule is named from it and matches on its letter', () => {
    const tiers = { standard: { per_minute: 60, per_day: 5000 }, 'gold (beta)_1': { per_minute: 600 } };
    const { resources } = synth({
      access: { ...ACCESS, config: { tier_letters: { 'gold (beta)_1': 'g' }, key_required: { tiers } } },
    });
    const rule = only(resources, 'AWS::WAFv2::WebACL')[1].Properties.Rules.find(
      (r: any) => r.Name === 'isoatlas-rate-per-key-gold--beta--1',
    );
    expect(rule.Statement.RateBasedStatement.ScopeDownStatement.RegexMatchStatement.RegexString).toBe(
      '^bearer isoatlas_g[a-z2-7]{8}_',
    );
    expect(ofType(resources, 'AWS::WAFv2::RegexPatternSet')).toHaveLength(0);
  });

  it("leaves a tier without a minute limit out of the default tier's rule, and gives it none", () => {
    const tiers = { standard: { per_minute: 60, per_day: 5000 }, unlimited: {} };
    const { resources } = synth({
      access: { ...ACCESS, config: { tier_letters: { unlimited: 'u' }, key_required: { tiers } } },
    });
    const rules: any[] = only(resources, 'AWS::WAFv2::WebACL')[1].Properties.Rules;
    expect(rules.map((r) => r.Name)).toEqual([
      'isoatlas-oversize-headers',
      'isoatlas-rate-per-ip',
      'isoatlas-rate-per-key',
    ]);
    const scope = rules[2].Statement.RateBasedStatement.ScopeDownStatement.AndStatement.Statements;
    expect(scope.map((st: any) => st.NotStatement?.Statement.RegexMatchStatement.RegexString).filter(Boolean)).toEqual([
      '^bearer isoatlas_u[a-z2-7]{8}_',
    ]);
  });
});

describe('bucket', () => {
  it('is private: all public access blocked, no ACL, SSE, TLS only, retained', () => {
    const { resources } = synth();
    const [, bucket] = dataBucket(resources);
    expect(bucket.Properties.BucketName).toBe(BUCKET);
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.Properties.AccessControl).toBeUndefined();
    expect(bucket.Properties.WebsiteConfiguration).toBeUndefined();
    expect(bucket.Properties.OwnershipControls.Rules).toEqual([{ ObjectOwnership: 'BucketOwnerEnforced' }]);
    expect(
      bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault
        .SSEAlgorithm,
    ).toBe('AES256');
    expect(bucket.DeletionPolicy).toBe('Retain');
  });

  it('admits only CloudFront, for this distribution only (OAC), and denies plain HTTP', () => {
    const { resources } = synth();
    const [distributionId] = only(resources, 'AWS::CloudFront::Distribution');
    const [, policy] = dataBucketPolicy(resources);
    const statements: any[] = policy.Properties.PolicyDocument.Statement;
    const allows = statements.filter((s) => s.Effect === 'Allow');
    expect(allows).toHaveLength(1);
    const [allow] = allows;
    expect(allow.Principal).toEqual({ Service: 'cloudfront.amazonaws.com' });
    expect(asList(allow.Action)).toEqual(['s3:GetObject']);
    const sourceArn = JSON.stringify(allow.Condition.StringEquals['AWS:SourceArn']);
    expect(sourceArn).toContain(':distribution/');
    expect(sourceArn).toContain(JSON.stringify({ Ref: distributionId }));
    // Nothing is allowed to everyone; '*' appears only in the deny-insecure-transport statements.
    for (const s of statements.filter((s) => JSON.stringify(s.Principal).includes('*'))) expect(s.Effect).toBe('Deny');
    expect(statements.some((s) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false')).toBe(
      true,
    );
  });
});

describe('distribution', () => {
  it('reaches the bucket through an Origin Access Control, not an OAI or a website endpoint', () => {
    const { resources } = synth();
    const [oacId, oac] = only(resources, 'AWS::CloudFront::OriginAccessControl');
    expect(oac.Properties.OriginAccessControlConfig).toMatchObject({
      OriginAccessControlOriginType: 's3',
      SigningBehavior: 'always',
      SigningProtocol: 'sigv4',
    });
    expect(ofType(resources, 'AWS::CloudFront::CloudFrontOriginAccessIdentity')).toHaveLength(0);
    const origins = config(resources).Origins;
    expect(origins).toHaveLength(1);
    expect(origins[0].OriginAccessControlId).toEqual({ 'Fn::GetAtt': [oacId, 'Id'] });
    expect(origins[0].S3OriginConfig).toEqual({ OriginAccessIdentity: '' });
    expect(origins[0].DomainName['Fn::GetAtt'][1]).toBe('RegionalDomainName');
    expect(origins[0].OriginPath).toBeUndefined();
  });

  it('maps a bucket prefix away with the origin path and scopes the function to it', () => {
    const { resources } = synth({ prefix: 'atlas/v1/' });
    expect(config(resources).Origins[0].OriginPath).toBe('/atlas/v1');
    const statements = roleStatements(resources, functionWithHandler(resources, 'index.handler'));
    const get = statements.find((s) => s.Action === 's3:GetObject');
    expect(JSON.stringify(get.Resource)).toContain('"/atlas/v1/*"');
    expect(() => synth({ prefix: 'atlas' })).toThrow(/prefix/);
    expect(() => synth({ prefix: '/atlas/' })).toThrow(/prefix/);
  });

  it('is HTTPS only, HTTP/2 and 3, compressed, on every behaviour but packs (read by byte range)', () => {
    const { resources } = synth();
    const c = config(resources);
    expect(c.HttpVersion).toBe('http2and3');
    const all = [c.DefaultCacheBehavior, ...c.CacheBehaviors];
    expect(c.CacheBehaviors.map((b: any) => b.PathPattern).sort()).toEqual([
      'api/v1/*',
      'objects/*',
      'packs/*',
      'releases/*',
    ]);
    for (const b of all) {
      expect(b.ViewerProtocolPolicy).toBe('redirect-to-https');
      expect(b.Compress, b.PathPattern ?? 'default').toBe(b.PathPattern !== 'packs/*');
    }
  });

  it('/packs/* is read from the bucket as objects/* is, behind the same gate, cached for a year, never compressed', () => {
    for (const props of [{}, { access: ACCESS }]) {
      const { resources } = synth(props);
      const packs = behaviour(resources, 'packs/*');
      const objects = behaviour(resources, 'objects/*');
      expect(packs.TargetOriginId).toBe(objects.TargetOriginId);
      expect(packs.FunctionAssociations).toEqual(objects.FunctionAssociations);
      expect(packs.FunctionAssociations).toHaveLength(1);
      expect(packs.LambdaFunctionAssociations).toBeUndefined();
      expect(packs.AllowedMethods).toEqual(objects.AllowedMethods);
      expect(packs.ResponseHeadersPolicyId).toEqual(objects.ResponseHeadersPolicyId);
      const policy = byRef(resources, packs.CachePolicyId).Properties.CachePolicyConfig;
      expect(policy.DefaultTTL).toBe(365 * 86400);
      expect(policy.MinTTL).toBe(86400);
      const key = policy.ParametersInCacheKeyAndForwardedToOrigin;
      expect(key.QueryStringsConfig.QueryStringBehavior).toBe('none');
      expect(key.HeadersConfig).toEqual({ HeaderBehavior: 'none' });
      // A compressed answer's ranges would count compressed bytes, not the pack's.
      expect(key.EnableAcceptEncodingGzip).toBe(false);
      expect(key.EnableAcceptEncodingBrotli).toBe(false);
    }
  });

  it('/api/v1/*: the origin-request function; without access, a viewer gate that only pins the release', () => {
    const { resources } = synth();
    const api = behaviour(resources, 'api/v1/*');
    expect(api.AllowedMethods).toEqual(['GET', 'HEAD', 'OPTIONS']);
    expect(api.LambdaFunctionAssociations.map((a: any) => a.EventType)).toEqual(['origin-request']);
    expect(associatedFunction(resources, api.LambdaFunctionAssociations[0]).Properties.Handler).toBe('index.handler');
    expect(ofType(resources, 'AWS::DynamoDB::Table')).toHaveLength(0);
    expect(ofType(resources, 'AWS::Lambda::Function')).toHaveLength(1);
    // Release files: the same function finds their objects (and sends the request on to the bucket).
    const releases = behaviour(resources, 'releases/*');
    expect(releases.LambdaFunctionAssociations.map((a: any) => a.EventType)).toEqual(['origin-request']);
    expect(associatedFunction(resources, releases.LambdaFunctionAssociations[0])).toBe(
      associatedFunction(resources, api.LambdaFunctionAssociations[0]),
    );
    // The pointer, the history and the objects are read from the bucket as they are.
    expect(config(resources).DefaultCacheBehavior.LambdaFunctionAssociations).toBeUndefined();
    expect(behaviour(resources, 'objects/*').LambdaFunctionAssociations).toBeUndefined();
    const [gateId, gate] = only(resources, 'AWS::CloudFront::Function');
    expect(gate.Properties.FunctionCode).toBe(keyGateCode(keyGateSettings(null)));
    for (const b of [config(resources).DefaultCacheBehavior, ...config(resources).CacheBehaviors]) {
      expect(b.FunctionAssociations).toEqual([
        { EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [gateId, 'FunctionARN'] } },
      ]);
    }
  });

  it('/api/v1/* cache key: path + the query parameters the routes declare only; no headers (Authorization), no cookies', () => {
    const { resources } = synth({ access: ACCESS });
    const api = behaviour(resources, 'api/v1/*');
    const policy = byRef(resources, api.CachePolicyId);
    const c = policy.Properties.CachePolicyConfig;
    const key = c.ParametersInCacheKeyAndForwardedToOrigin;
    expect(key.QueryStringsConfig.QueryStringBehavior).toBe('whitelist');
    // Every query parameter a route of the contract reads, and no other: a route gaining a parameter
    // that CloudFront would drop from the key (serving one answer for every value) fails here.
    const declared = new Set(routes.flatMap((r) => [...r.integerParams, ...r.stringParams].map((p) => p.name)));
    expect([...key.QueryStringsConfig.QueryStrings].sort()).toEqual([...declared].sort());
    expect(key.HeadersConfig).toEqual({ HeaderBehavior: 'none' });
    expect(key.CookiesConfig).toEqual({ CookieBehavior: 'none' });
    expect(c.DefaultTTL).toBe(3600);
    expect(c.MaxTTL).toBe(86400);
    // Authorization reaches neither the cache key nor the origin request; no origin request policy
    // means the function is sent the cache key's values and no viewer header (Host included).
    expect(api.OriginRequestPolicyId).toBeUndefined();
    expect(ofType(resources, 'AWS::CloudFront::OriginRequestPolicy')).toHaveLength(0);
    expect(JSON.stringify(c).toLowerCase()).not.toContain('authorization');
  });

  it('/releases/* and /objects/* are cached for a year, the default behaviour (current.json, releases.json) for 10 s', () => {
    const { resources } = synth();
    for (const pattern of ['releases/*', 'objects/*']) {
      const immutable = byRef(resources, behaviour(resources, pattern).CachePolicyId).Properties.CachePolicyConfig;
      expect(immutable.DefaultTTL).toBe(365 * 86400);
      expect(immutable.MaxTTL).toBe(365 * 86400);
      expect(immutable.ParametersInCacheKeyAndForwardedToOrigin.QueryStringsConfig.QueryStringBehavior).toBe('none');
    }
    const pointer = byRef(resources, config(resources).DefaultCacheBehavior.CachePolicyId).Properties.CachePolicyConfig;
    expect(pointer.DefaultTTL).toBe(10);
    expect(pointer.MaxTTL).toBeLessThanOrEqual(60);
  });

  it("answers CORS for any origin with the values of the edge function's own preflight answer, on every behaviour", async () => {
    const handler = createHandler({ origin: { description: 'none', read: async () => null } });
    const answer = await handler(new Request('http://atlas.test/nowhere'));
    const exposed = answer.headers.get('access-control-expose-headers')!.split(/,\s*/);
    expect(exposed).toContain('RateLimit-Remaining');
    const preflight = await handler(
      new Request('http://atlas.test/api/v1/genes/PRR5', {
        method: 'OPTIONS',
        headers: { Origin: 'https://example.org', 'Access-Control-Request-Method': 'GET' },
      }),
    );
    const list = (name: string) => preflight.headers.get(name)!.split(/,\s*/);
    for (const props of [{}, { access: { mode: 'open' as const } }, { access: ACCESS }]) {
      const { resources } = synth(props);
      for (const b of [config(resources).DefaultCacheBehavior, ...config(resources).CacheBehaviors]) {
        const cors = byRef(resources, b.ResponseHeadersPolicyId).Properties.ResponseHeadersPolicyConfig.CorsConfig;
        expect(cors.AccessControlAllowOrigins.Items).toEqual([preflight.headers.get('access-control-allow-origin')]);
        expect(cors.AccessControlAllowMethods.Items).toEqual(list('access-control-allow-methods'));
        expect(cors.AccessControlAllowHeaders.Items).toEqual(list('access-control-allow-headers'));
        expect(String(cors.AccessControlMaxAgeSec)).toBe(preflight.headers.get('access-control-max-age'));
        expect([...cors.AccessControlExposeHeaders.Items].sort()).toEqual(exposed.sort());
        expect(cors.AccessControlAllowCredentials).toBe(false);
      }
    }
  });

  it('admits OPTIONS on every behaviour (CloudFront refuses other methods with 403 before the gate runs), caching only GET and HEAD', () => {
    for (const props of [{}, { access: { mode: 'open' as const } }, { access: ACCESS }]) {
      const { resources } = synth(props);
      for (const b of [config(resources).DefaultCacheBehavior, ...config(resources).CacheBehaviors]) {
        expect(b.AllowedMethods, b.PathPattern ?? 'default').toEqual(['GET', 'HEAD', 'OPTIONS']);
        expect(b.CachedMethods, b.PathPattern ?? 'default').toEqual(['GET', 'HEAD']);
      }
    }
  });

  // A response headers policy's Cache-Control goes to viewers only; CloudFront caches by the origin's.
  // Whether CloudFront also applies the policy to what the gate generates (401/429/503/204) or to WAF's
  // 429, the value keeps any refusal from being reused by a browser without asking again.
  describe('what viewers are told to cache', () => {
    const viewerCacheControl = (resources: Resources, b: any) =>
      byRef(
        resources,
        b.ResponseHeadersPolicyId,
      ).Properties.ResponseHeadersPolicyConfig.CustomHeadersConfig?.Items.find(
        (h: any) => h.Header.toLowerCase() === 'cache-control',
      );

    it("API answers: private, revalidated, in every arrangement (the gate pins the release in CloudFront's cache key only); CloudFront still caches them", () => {
      for (const props of [{}, { access: { mode: 'open' as const } }, { access: ACCESS }]) {
        const { resources } = synth(props);
        const api = behaviour(resources, 'api/v1/*');
        const header = viewerCacheControl(resources, api);
        expect(header).toEqual({ Header: 'Cache-Control', Value: 'private, no-cache', Override: true });
        // CloudFront's own cache is governed by the cache policy and the origin's Cache-Control, which
        // stays public: a TTL above zero, and no header in the key.
        const policy = byRef(resources, api.CachePolicyId).Properties.CachePolicyConfig;
        expect(policy.DefaultTTL).toBeGreaterThan(0);
        expect(policy.MaxTTL).toBeGreaterThan(0);
      }
    });

    it("B: every behaviour private; A and no access: release files, objects and the pointer keep the origin's Cache-Control", () => {
      const keyed = synth({ access: ACCESS }).resources;
      for (const b of [config(keyed).DefaultCacheBehavior, ...config(keyed).CacheBehaviors]) {
        expect(viewerCacheControl(keyed, b), b.PathPattern ?? 'default').toMatchObject({
          Value: 'private, no-cache',
          Override: true,
        });
      }
      for (const props of [{}, { access: { mode: 'open' as const } }]) {
        const { resources } = synth(props);
        for (const b of [
          config(resources).DefaultCacheBehavior,
          behaviour(resources, 'releases/*'),
          behaviour(resources, 'objects/*'),
          behaviour(resources, 'packs/*'),
        ]) {
          expect(viewerCacheControl(resources, b), b.PathPattern ?? 'default').toBeUndefined();
        }
      }
    });

    it('the value never makes a refusal or an error reusable without revalidation: no max-age, no-cache, private', () => {
      const { resources } = synth({ access: ACCESS });
      const value = viewerCacheControl(resources, behaviour(resources, 'api/v1/*')).Value as string;
      const directives = value.split(/,\s*/);
      expect(directives).toContain('private');
      expect(directives).toContain('no-cache');
      expect(directives.some((d) => /max-age|immutable|stale-/.test(d))).toBe(false);
    });
  });
});

/** The headers a WAF 429 lets a script read (its Access-Control-Expose-Headers). */
const exposedByWaf = (custom: any): string[] =>
  (custom.ResponseHeaders.find((h: any) => h.Name.toLowerCase() === 'access-control-expose-headers')?.Value ?? '')
    .split(/,\s*/)
    .filter(Boolean);

describe('WAF', () => {
  it("every 429, in every arrangement, exposes the contract's headers (Retry-After among them) to scripts, within WAF's header value limit", async () => {
    const answer = await createHandler({ origin: { description: 'none', read: async () => null } })(
      new Request('http://atlas.test/nowhere'),
    );
    for (const props of [{}, { access: { mode: 'open' as const } }, { access: ACCESS }]) {
      const acl = only(synth(props).resources, 'AWS::WAFv2::WebACL')[1].Properties;
      for (const rule of acl.Rules.filter((r: any) => r.Action?.Block?.CustomResponse.ResponseCode === 429)) {
        const custom = rule.Action.Block.CustomResponse;
        expect(exposedByWaf(custom), rule.Name).toEqual(
          answer.headers.get('access-control-expose-headers')!.split(/,\s*/),
        );
        expect(exposedByWaf(custom)).toContain('Retry-After');
        expect(custom.ResponseHeaders).toContainEqual({
          Name: 'Access-Control-Allow-Origin',
          Value: answer.headers.get('access-control-allow-origin'),
        });
        for (const h of custom.ResponseHeaders) expect(h.Value.length, h.Name).toBeLessThanOrEqual(255); // WAF's CustomHTTPHeader limit
      }
    }
  });

  it('every custom response body, in every arrangement, is what the OpenAPI document declares for its status as application/json', async () => {
    const doc = buildOpenApi({ release: 'test', title: 'test' });
    const api = new OpenAPIBackend({
      definition: structuredClone(doc) as any,
      quick: true,
      strict: true,
      customizeAjv: (ajv) => (addFormats.default(ajv), ajv),
    });
    await api.init();
    let checked = 0;
    for (const props of [{}, { access: { mode: 'open' as const } }, { access: ACCESS }]) {
      const acl = only(synth(props).resources, 'AWS::WAFv2::WebACL')[1].Properties;
      for (const [key, body] of Object.entries<any>(acl.CustomResponseBodies)) {
        expect(body.ContentType, key).toBe('APPLICATION_JSON');
        const problem = JSON.parse(body.Content);
        const status = acl.Rules.find((r: any) => r.Action?.Block?.CustomResponse.CustomResponseBodyKey === key).Action
          .Block.CustomResponse.ResponseCode;
        expect(problem.status, key).toBe(status);
        for (const route of routes) {
          const op = api.getOperation(route.id)!;
          expect(Object.keys((op.responses as any)[status].content)).toContain('application/json');
          expect(api.validateResponse(problem, op, status).errors ?? [], `${key} as ${route.id}`).toEqual([]);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(routes.length * 11);
    // The check can fail: a problem body with an instance (the edge's own 429) is not the WAF's.
    const edge429 = {
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: 'x',
      instance: '/api/v1/release',
    };
    expect(api.validateResponse(edge429, api.getOperation('release')!, 429).errors ?? []).not.toEqual([]);
  });

  it("blocks first, in every arrangement, a request whose headers WAF cannot inspect whole: all headers, oversize MATCH, a 400 saying what the server's 431 says", () => {
    for (const props of [{}, { access: { mode: 'open' as const } }, { access: ACCESS }]) {
      const acl = only(synth(props).resources, 'AWS::WAFv2::WebACL')[1].Properties;
      const [first, ...rest] = [...acl.Rules].sort((a: any, b: any) => a.Priority - b.Priority);
      expect(first.Name).toBe('isoatlas-oversize-headers');
      expect(rest.length).toBeGreaterThan(0);
      for (const rule of rest) expect(rule.Statement.RateBasedStatement, rule.Name).toBeDefined();
      expect(first.Statement).toEqual({
        SizeConstraintStatement: {
          FieldToMatch: { Headers: { MatchPattern: { All: {} }, MatchScope: 'ALL', OversizeHandling: 'MATCH' } },
          ComparisonOperator: 'GT',
          Size: HEADER_LIMITS.bytes,
          TextTransformations: [{ Priority: 0, Type: 'NONE' }],
        },
      });
      const custom = first.Action.Block.CustomResponse;
      expect(custom.ResponseCode).toBe(400);
      expect(custom.ResponseHeaders).toContainEqual({ Name: 'Cache-Control', Value: 'no-store' });
      const body = JSON.parse(acl.CustomResponseBodies[custom.CustomResponseBodyKey].Content);
      expect(body).toEqual({ type: 'about:blank', title: 'Bad Request', status: 400, detail: HEADER_LIMITS_DETAIL });
      expect(validate('WafRefusal', body)).toEqual([]);
    }
  });

  for (const [limit, expected] of [
    [undefined, 6000],
    [2000, 2000],
  ] as const) {
    it(`limits each IP to ${expected} requests per 5 minutes and guards the distribution`, () => {
      const { resources } = synth(limit === undefined ? {} : { wafRequestsPer5MinPerIp: limit });
      const [aclId, acl] = only(resources, 'AWS::WAFv2::WebACL');
      expect(acl.Properties.Scope).toBe('CLOUDFRONT');
      expect(acl.Properties.DefaultAction).toEqual({ Allow: {} });
      const rate = acl.Properties.Rules.filter((r: any) => r.Statement.RateBasedStatement);
      expect(rate).toHaveLength(1);
      expect(rate[0].Statement.RateBasedStatement).toMatchObject({ AggregateKeyType: 'IP', Limit: expected });
      // A 429 like the edge's own: Retry-After, and a problem body that the contract's schema accepts.
      const custom = rate[0].Action.Block.CustomResponse;
      expect(custom.ResponseCode).toBe(429);
      expect(custom.ResponseHeaders).toContainEqual({ Name: 'Retry-After', Value: String(WAF_WINDOW_SECONDS) });
      expect(exposedByWaf(custom)).toContain('Retry-After');
      const body = acl.Properties.CustomResponseBodies[custom.CustomResponseBodyKey];
      expect(body.ContentType).toBe('APPLICATION_JSON');
      const problem = JSON.parse(body.Content);
      expect(validate('Problem', problem)).toEqual([]);
      expect(problem).toMatchObject({ status: 429, title: 'Too Many Requests' });
      expect(problem.detail).toContain(String(expected));
      expect(config(resources).WebACLId).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] });
    });
  }

  it('adds the AWS managed common rule set only when asked, and refuses limits WAF would reject', () => {
    const managed = (r: Resources) =>
      only(r, 'AWS::WAFv2::WebACL')[1].Properties.Rules.filter((x: any) => x.Statement.ManagedRuleGroupStatement);
    expect(managed(synth().resources)).toHaveLength(0);
    expect(managed(synth({ wafManagedCommonRules: true }).resources)[0].Statement.ManagedRuleGroupStatement).toEqual({
      VendorName: 'AWS',
      Name: 'AWSManagedRulesCommonRuleSet',
    });
    expect(() => synth({ wafRequestsPer5MinPerIp: 5 })).toThrow(/WAF rate limit/);
    expect(() => synth({ wafRequestsPer5MinPerIp: 100.5 })).toThrow(/WAF rate limit/);
    expect(() => synth({ access: { ...ACCESS, config: { key_required: { per_ip: { per_minute: 5 } } } } })).toThrow(
      /WAF rate limit/,
    );
  });
});

describe('bucket in another region', () => {
  it('lives in a stack of its own there, admitting this distribution; the CDN stack only names it', async () => {
    const regional = await regionalBundle();
    const app = new App({ outdir: mkdtempSync(join(work, 'out-')), context: SYNTH_CONTEXT });
    const cdn = new IsoatlasCdnStack(app, 'Cdn', {
      bucketName: BUCKET,
      bucketRegion: 'eu-west-1',
      edgeCodeDir: regional,
    });
    const held = new IsoatlasBucketStack(app, 'Bucket', {
      bucketName: BUCKET,
      distributionArn: cdn.distribution.distributionArn,
      env: { account: '111111111111', region: 'eu-west-1' },
    });
    const assembly = app.synth();
    const cdnResources = assembly.getStackByName('Cdn').template.Resources as Resources;
    const bucketResources = assembly.getStackByName('Bucket').template.Resources as Resources;
    expect(assembly.getStackByName('Cdn').messages.filter((m) => m.level !== 'info')).toEqual([]);

    // The CDN stack: no data bucket, an OAC origin on the bucket's regional endpoint, edge pieces in us-east-1.
    expect(ofType(cdnResources, 'AWS::S3::Bucket').filter(([, r]) => r.Properties.BucketName)).toHaveLength(0);
    const origin = config(cdnResources).Origins[0];
    expect(origin.DomainName).toBe(`${BUCKET}.s3.eu-west-1.amazonaws.com`);
    expect(origin.OriginAccessControlId).toBeDefined();
    expect(cdn.region).toBe('us-east-1');
    const get = roleStatements(cdnResources, functionWithHandler(cdnResources, 'index.handler')).find(
      (st) => st.Action === 's3:GetObject',
    );
    expect(JSON.stringify(get.Resource)).toContain(`:s3:::${BUCKET}/*`);

    // The bucket's stack: private, and readable by this distribution only.
    expect(held.region).toBe('eu-west-1');
    const [bucketId, bucket] = only(bucketResources, 'AWS::S3::Bucket');
    expect(bucket.Properties.BucketName).toBe(BUCKET);
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.DeletionPolicy).toBe('Retain');
    const statements = only(bucketResources, 'AWS::S3::BucketPolicy')[1].Properties.PolicyDocument.Statement;
    const allow = statements.filter((st: any) => st.Effect === 'Allow');
    expect(allow).toHaveLength(1);
    expect(allow[0]).toMatchObject({ Action: 's3:GetObject', Principal: { Service: 'cloudfront.amazonaws.com' } });
    expect(allow[0].Resource).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/*']] });
    // The distribution's ARN, read from the CDN stack across regions.
    expect(JSON.stringify(allow[0].Condition.StringEquals['AWS:SourceArn'])).toMatch(/ExportsReader|resolve:ssm/);
    // CDK's cross-region helpers are Lambda functions too: current runtimes only.
    for (const [, fn] of [
      ...ofType(cdnResources, 'AWS::Lambda::Function'),
      ...ofType(bucketResources, 'AWS::Lambda::Function'),
    ]) {
      expect(fn.Properties.Runtime).toMatch(/^nodejs(2[2-9]|[3-9]\d)\.x$/);
    }
  });

  it('refuses a region that is not one, and a bundle built for another region', () => {
    expect(() => synth({ bucketRegion: 'Europe' })).toThrow(/not an AWS region/);
    expect(() => synth({ bucketRegion: 'eu-west-1' })).toThrow(/not built for this stack \(no mention of eu-west-1\)/);
  });
});

describe('custom domain', () => {
  const ARN = 'arn:aws:acm:us-east-1:111111111111:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789';
  it('serves its names with its us-east-1 certificate over TLS 1.2 or newer (SNI)', () => {
    const cfg = config(synth({ customDomain: { names: ['atlas.example.org'], certificateArn: ARN } }).resources);
    expect(cfg.Aliases).toEqual(['atlas.example.org']);
    expect(cfg.ViewerCertificate).toEqual({
      AcmCertificateArn: ARN,
      MinimumProtocolVersion: 'TLSv1.2_2021',
      SslSupportMethod: 'sni-only',
    });
    expect(config(synth().resources).Aliases).toBeUndefined();
  });

  it('warns when keys would be sent to the default certificate, which CloudFront holds at TLSv1', () => {
    const warnings = (props: Partial<IsoatlasCdnProps>) =>
      synth(props)
        .stack.node.metadata.filter((m) => m.type === 'aws:cdk:warning')
        .map((m) => String(m.data));
    const domain = { customDomain: { names: ['atlas.example.org'], certificateArn: ARN } };
    for (const access of [ACCESS, { ...ACCESS, mode: 'open' as const }]) {
      expect(warnings({ access }).filter((w) => w.includes(KEYS_OVER_OLD_TLS))).toHaveLength(1);
      expect(warnings({ access }).join('\n')).toMatch(/TLS 1\.0[\s\S]*custom domain/);
      expect(warnings({ access, ...domain }).filter((w) => w.includes(KEYS_OVER_OLD_TLS))).toHaveLength(0);
    }
    // No access control: no key is ever sent, nothing to warn of.
    expect(warnings({}).filter((w) => w.includes(KEYS_OVER_OLD_TLS))).toHaveLength(0);
  });

  it('refuses a certificate outside us-east-1 and names that are not domain names', () => {
    expect(() =>
      synth({ customDomain: { names: ['atlas.example.org'], certificateArn: ARN.replace('us-east-1', 'eu-west-1') } }),
    ).toThrow(/us-east-1/);
    expect(() => synth({ customDomain: { names: ['not a domain'], certificateArn: ARN } })).toThrow(/domain names/);
  });
});

describe('standard logs', () => {
  it('go to a private, ACL-enabled (object writer) bucket that expires them, without cookies', () => {
    for (const props of [{}, { access: ACCESS }]) {
      const { resources } = synth(props);
      const logging = config(resources).Logging;
      expect(logging.Prefix).toBe('cloudfront/');
      expect(logging.IncludeCookies).toBe(false);
      const bucket = byRef(
        resources,
        logging.Bucket['Fn::GetAtt'] ? { Ref: logging.Bucket['Fn::GetAtt'][0] } : logging.Bucket,
      ).Properties;
      expect(bucket.OwnershipControls.Rules).toEqual([{ ObjectOwnership: 'ObjectWriter' }]);
      expect(bucket.PublicAccessBlockConfiguration).toEqual({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      });
      expect(bucket.LifecycleConfiguration.Rules[0].ExpirationInDays).toBeGreaterThan(0);
    }
  });
});

describe('edge functions', () => {
  it('are Lambda@Edge-compatible: Node.js 22, no environment, versions, edgelambda trust, limits', () => {
    for (const props of [{}, { access: ACCESS }]) {
      const { resources } = synth(props);
      for (const [, fn] of ofType(resources, 'AWS::Lambda::Function').filter(
        ([, f]) => f.Properties.Handler === 'index.handler',
      )) {
        expect(fn.Properties.Runtime).toBe('nodejs22.x');
        expect(fn.Properties.Environment).toBeUndefined(); // Lambda@Edge rejects functions with variables
        expect(fn.Properties.VpcConfig).toBeUndefined();
        expect(fn.Properties.Architectures ?? ['x86_64']).toEqual(['x86_64']);
        const role = resources[fn.Properties.Role['Fn::GetAtt'][0]];
        const principals = role.Properties.AssumeRolePolicyDocument.Statement.flatMap((s: any) =>
          asList(s.Principal.Service),
        );
        expect(principals).toContain('edgelambda.amazonaws.com');
      }
      const origin = functionWithHandler(resources, 'index.handler');
      expect(origin.Properties.Timeout).toBeLessThanOrEqual(30);
      expect(origin.Properties.MemorySize).toBeLessThanOrEqual(10240);
    }
  });

  it('the origin function may read the bucket objects, nothing more', () => {
    const { resources } = synth();
    const [bucketId] = dataBucket(resources);
    const statements = roleStatements(resources, functionWithHandler(resources, 'index.handler'));
    const actions = statements.flatMap((s) => asList(s.Action)).sort();
    expect(actions).toEqual(['s3:GetObject', 's3:ListBucket']);
    const get = statements.find((s) => s.Action === 's3:GetObject');
    expect(get.Resource).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/*']] });
    for (const s of statements) expect(s.Effect).toBe('Allow');
  });

  it('code is the edge bundle: one asset, index.js', () => {
    const { stack, resources } = synth();
    expect(ofType(resources, 'AWS::Lambda::Function')).toHaveLength(1);
    const outdir = (stack.node.root as App).outdir;
    const assets = readdirSync(outdir).filter((f) => f.startsWith('asset.'));
    expect(assets).toHaveLength(1);
    expect(readFileSync(join(outdir, assets[0], 'index.js'), 'utf8')).toBe(
      readFileSync(join(plainBundle, 'index.js'), 'utf8'),
    );
  });
});

describe('access control (key gate, KeyValueStore, WAF, day meter)', () => {
  const gateId = (resources: Resources) => only(resources, 'AWS::CloudFront::Function')[0];

  for (const mode of ['key-required', 'open'] as const) {
    it(`${mode}: the key gate on every behaviour, reading the KeyValueStore; no Lambda at viewer request`, () => {
      const { resources } = synth({ access: { ...ACCESS, mode } });
      const [id, gate] = only(resources, 'AWS::CloudFront::Function');
      const [storeId] = only(resources, 'AWS::CloudFront::KeyValueStore');
      expect(gate.Properties.FunctionConfig.Runtime).toBe('cloudfront-js-2.0');
      expect(gate.Properties.FunctionConfig.KeyValueStoreAssociations).toEqual([
        { KeyValueStoreARN: { 'Fn::GetAtt': [storeId, 'Arn'] } },
      ]);
      expect(gate.Properties.AutoPublish).toBe(true);
      expect(gate.Properties.FunctionCode).toBe(keyGateCode(keyGateSettings(resolveAccessConfig({}, mode))));
      expect(Buffer.byteLength(gate.Properties.FunctionCode)).toBeLessThanOrEqual(KEY_GATE_MAX_BYTES);
      // No request path reaches the bucket without the gate: the default behaviour (current.json and
      // releases.json and anything unmatched), releases/* (structures), objects/*, packs/* and api/v1/*.
      const all = [config(resources).DefaultCacheBehavior, ...config(resources).CacheBehaviors];
      expect(all).toHaveLength(5);
      for (const b of all) {
        expect(b.FunctionAssociations, b.PathPattern ?? 'default').toEqual([
          { EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [id, 'FunctionARN'] } },
        ]);
        expect((b.LambdaFunctionAssociations ?? []).map((a: any) => a.EventType)).not.toContain('viewer-request');
      }
      expect(behaviour(resources, 'api/v1/*').LambdaFunctionAssociations.map((a: any) => a.EventType)).toEqual([
        'origin-request',
      ]);
      expect(config(resources).IPV6Enabled).toBe(false);
    });
  }

  it('key-required: per-minute WAF limits per IP and per key (on Authorization), each a 429 with Retry-After and a problem body; no samples', () => {
    const { resources } = synth({ access: ACCESS });
    const acl = only(resources, 'AWS::WAFv2::WebACL')[1].Properties;
    expect(acl.Rules.map((r: any) => r.Name)).toEqual([
      'isoatlas-oversize-headers',
      'isoatlas-rate-per-ip',
      'isoatlas-rate-per-key',
      'isoatlas-rate-per-key-plus',
    ]);
    const rateRules = acl.Rules.filter((r: any) => r.Statement.RateBasedStatement);
    const [ip, key, plus] = rateRules.map((r: any) => r.Statement.RateBasedStatement);
    expect(ip).toEqual({ AggregateKeyType: 'IP', EvaluationWindowSec: 60, Limit: 1200 });
    expect(key).toMatchObject({ AggregateKeyType: 'CUSTOM_KEYS', EvaluationWindowSec: 60, Limit: 60 });
    // Counted per header lowercased: the gate admits a key spelled one way up to the scheme's case.
    const lowercased = [{ Priority: 0, Type: 'LOWERCASE' }];
    expect(key.CustomKeys).toEqual([{ Header: { Name: 'authorization', TextTransformations: lowercased } }]);
    expect(plus.CustomKeys).toEqual(key.CustomKeys);
    // The default tier's rule counts keyed requests whose id carries no other tier's letter.
    const [has, notPlus] = key.ScopeDownStatement.AndStatement.Statements;
    expect(has.SizeConstraintStatement).toMatchObject({
      FieldToMatch: { SingleHeader: { Name: 'authorization' } },
      ComparisonOperator: 'GT',
      Size: 0,
    });
    const inPlus = {
      RegexMatchStatement: {
        RegexString: '^bearer isoatlas_p[a-z2-7]{8}_',
        FieldToMatch: { SingleHeader: { Name: 'authorization' } },
        TextTransformations: lowercased,
      },
    };
    expect(notPlus).toEqual({ NotStatement: { Statement: inPlus } });
    // The plus tier's rule: its own limit, on every key whose id starts with its letter; no sets, no outputs for them.
    expect(plus).toMatchObject({
      AggregateKeyType: 'CUSTOM_KEYS',
      EvaluationWindowSec: 60,
      Limit: 600,
      ScopeDownStatement: inPlus,
    });
    expect(ofType(resources, 'AWS::WAFv2::RegexPatternSet')).toHaveLength(0);
    expect(Object.keys(Template.fromStack(synth({ access: ACCESS }).stack).toJSON().Outputs).join()).not.toContain(
      'TierPatternSet',
    );
    for (const rule of rateRules) {
      const custom = rule.Action.Block.CustomResponse;
      expect(custom.ResponseCode).toBe(429);
      expect(custom.ResponseHeaders).toContainEqual({ Name: 'Retry-After', Value: String(ACCESS_WINDOW_SECONDS) });
      const body = JSON.parse(acl.CustomResponseBodies[custom.CustomResponseBodyKey].Content);
      expect(validate('Problem', body)).toEqual([]);
      expect(body.detail).toContain(String(rule.Statement.RateBasedStatement.Limit));
      expect(rule.VisibilityConfig.SampledRequestsEnabled).toBe(false); // samples would show Authorization
    }
    expect(acl.VisibilityConfig.SampledRequestsEnabled).toBe(false);
  });

  it('open: anonymous requests limited per IP (900/min), keyed ones per IP (24,000/min) and per key (3,000/min); no day limits, so no meter', () => {
    const { resources } = synth({ access: { mode: 'open' } });
    const acl = only(resources, 'AWS::WAFv2::WebACL')[1].Properties;
    expect(acl.Rules.map((r: any) => r.Name)).toEqual([
      'isoatlas-oversize-headers',
      'isoatlas-anonymous-per-ip',
      'isoatlas-keyed-per-ip',
      'isoatlas-rate-per-key',
      'isoatlas-rate-per-key-plus',
    ]);
    const [anonymous, keyed, key] = acl.Rules.slice(1).map((r: any) => r.Statement.RateBasedStatement);
    expect(anonymous).toMatchObject({ AggregateKeyType: 'IP', EvaluationWindowSec: 60, Limit: 900 });
    expect(anonymous.ScopeDownStatement.NotStatement.Statement.SizeConstraintStatement.FieldToMatch).toEqual({
      SingleHeader: { Name: 'authorization' },
    });
    expect(keyed).toMatchObject({
      AggregateKeyType: 'IP',
      EvaluationWindowSec: 60,
      Limit: 24000,
      ScopeDownStatement: anonymous.ScopeDownStatement.NotStatement.Statement,
    });
    expect(
      JSON.parse(acl.CustomResponseBodies[acl.Rules[2].Action.Block.CustomResponse.CustomResponseBodyKey].Content)
        .detail,
    ).toContain('24000 requests in a minute from one IP address with API keys');
    // The ceiling follows the config: twice the highest tier's unless set.
    const raised = only(
      synth({ access: { mode: 'open', config: { open: { keyed_per_ip: { per_minute: 50000 } } } } }).resources,
      'AWS::WAFv2::WebACL',
    )[1].Properties;
    expect(raised.Rules[2].Statement.RateBasedStatement.Limit).toBe(50000);
    expect(key).toMatchObject({ AggregateKeyType: 'CUSTOM_KEYS', Limit: 3000 });
    expect(ofType(resources, 'AWS::Lambda::Function')).toHaveLength(1);
    expect(ofType(resources, 'AWS::DynamoDB::Table')).toHaveLength(0);
  });

  it("keeps the KeyValueStore (secret, keys, pin) and the meter's counts when the stack is deleted or either is replaced", () => {
    const { resources } = synth({ access: ACCESS });
    for (const type of ['AWS::CloudFront::KeyValueStore', 'AWS::DynamoDB::Table']) {
      const [, kept] = only(resources, type);
      expect([kept.DeletionPolicy, kept.UpdateReplacePolicy], type).toEqual(['Retain', 'Retain']);
    }
    // Without access control the store still pins the release: kept too.
    const [, pin] = only(synth().resources, 'AWS::CloudFront::KeyValueStore');
    expect(pin.DeletionPolicy).toBe('Retain');
  });

  it("the day meter's log lines expire (a month), in a group of the stack's own", () => {
    const { resources } = synth({ access: ACCESS });
    const meter = functionWithHandler(resources, 'index.meter');
    const group = byRef(resources, meter.Properties.LoggingConfig.LogGroup);
    expect([group.Type, group.Properties.RetentionInDays]).toEqual(['AWS::Logs::LogGroup', 30]);
  });

  it('adopts a retained KeyValueStore by its ARN: no store of its own; the gate, the meter and the output name that one', () => {
    const arn = 'arn:aws:cloudfront::111111111111:key-value-store/0f8f2f1e-1234-4321-abcd-0123456789ab';
    const { resources, template } = synth({ access: ACCESS, keyValueStoreArn: arn });
    expect(ofType(resources, 'AWS::CloudFront::KeyValueStore')).toHaveLength(0);
    const [, gate] = only(resources, 'AWS::CloudFront::Function');
    expect(gate.Properties.FunctionConfig.KeyValueStoreAssociations).toEqual([{ KeyValueStoreARN: arn }]);
    for (const handler of ['index.meter', 'index.writeMarks']) {
      const fn = functionWithHandler(resources, handler);
      expect(fn.Properties.Environment.Variables.ISOATLAS_KVS_ARN).toBe(arn);
      expect(roleStatements(resources, fn).filter((st) => asList(st.Resource).includes(arn))).not.toHaveLength(0);
    }
    expect(template.toJSON().Outputs.KeyValueStoreArn.Value).toBe(arn);
  });

  it("key-required: the day meter reads the gate's log lines and may write counters, read the store and invoke the mark writer, nothing more", () => {
    const { resources } = synth({ access: ACCESS });
    const meter = functionWithHandler(resources, 'index.meter');
    // Lambda@Edge stays on Node.js 22 (its newest); the meter is regional and runs the newest Lambda has.
    expect(meter.Properties.Runtime).toBe('nodejs24.x');
    const [tableId, table] = only(resources, 'AWS::DynamoDB::Table');
    // Per key and day (partition), one item per log delivery and a running estimate (sort key).
    expect(table.Properties.KeySchema).toEqual([
      { AttributeName: 'counter', KeyType: 'HASH' },
      { AttributeName: 'entry', KeyType: 'RANGE' },
    ]);
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: 'counter', AttributeType: 'S' },
        { AttributeName: 'entry', AttributeType: 'S' },
      ]),
    );
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at', Enabled: true });
    const [storeId] = only(resources, 'AWS::CloudFront::KeyValueStore');
    const env = meter.Properties.Environment.Variables;
    expect(env.ISOATLAS_METER_TABLE).toEqual({ Ref: tableId });
    expect(env.ISOATLAS_KVS_ARN).toEqual({ 'Fn::GetAtt': [storeId, 'Arn'] });
    expect(JSON.parse(env.ISOATLAS_ACCESS_CONFIG)).toEqual(resolveAccessConfig({}, 'key-required'));
    const statements = roleStatements(resources, meter);
    expect(statements.flatMap((st) => asList(st.Action)).sort()).toEqual([
      'cloudfront-keyvaluestore:GetKey',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      // The mark writer (its own test).
      'lambda:InvokeFunction',
      // To its failure queue (below).
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:SendMessage',
    ]);
    // Invoked asynchronously by CloudWatch Logs: failed deliveries are retried, waiting ones kept
    // as long as Lambda allows.
    const [, invokeConfig] = only(resources, 'AWS::Lambda::EventInvokeConfig');
    expect(invokeConfig.Properties).toMatchObject({
      MaximumRetryAttempts: 2,
      MaximumEventAgeInSeconds: 6 * 3600,
      Qualifier: '$LATEST',
    });
    // A delivery it could not count is kept, not dropped: in a queue of 14 days, named in an output.
    const [queueId, queue] = only(resources, 'AWS::SQS::Queue');
    expect(invokeConfig.Properties.DestinationConfig).toEqual({
      OnFailure: { Destination: { 'Fn::GetAtt': [queueId, 'Arn'] } },
    });
    expect(queue.Properties).toMatchObject({ MessageRetentionPeriod: 14 * 24 * 3600, SqsManagedSseEnabled: true });
    expect(synth({ access: ACCESS }).template.toJSON().Outputs.MeterFailureQueueUrl.Value).toEqual({ Ref: queueId });
    expect(invokeConfig.Properties.FunctionName).toEqual({
      Ref: Object.entries(resources).find(([, r]) => r === meter)![0],
    });
    const gateName = only(resources, 'AWS::CloudFront::Function')[1].Properties.Name;
    // The gate's group (the meter's own is the other: its lines expire, test above).
    const [logsId, group] = ofType(resources, 'AWS::Logs::LogGroup').find(
      ([, g]) => g.Properties.LogGroupName === `/aws/cloudfront/function/${gateName}`,
    )!;
    expect(group.Properties.LogGroupName).toBe(`/aws/cloudfront/function/${gateName}`);
    const [, sub] = only(resources, 'AWS::Logs::SubscriptionFilter');
    expect(sub.Properties).toMatchObject({ LogGroupName: { Ref: logsId }, FilterPattern: '"isoatlas-meter"' });
    expect(sub.Properties.DestinationArn['Fn::GetAtt'][0]).toBe(
      Object.entries(resources).find(([, r]) => r === meter)![0],
    );
    expect(gateId(resources)).toBeDefined();
    expect(() => synth({ access: { mode: 'key-required' } })).toThrow(/day meter/);
  });

  it('only the mark writer may write the store (GetKey, PutKey, DescribeKeyValueStore on it, nothing else); the meter writes none of it and may invoke the writer only', () => {
    const { resources } = synth({ access: ACCESS });
    const [storeId] = only(resources, 'AWS::CloudFront::KeyValueStore');
    const store = { 'Fn::GetAtt': [storeId, 'Arn'] };
    const writer = functionWithHandler(resources, 'index.writeMarks');
    const writerId = Object.entries(resources).find(([, r]) => r === writer)![0];
    const meter = functionWithHandler(resources, 'index.meter');
    // The writer: the three store actions, on the store alone, and the logging Lambda gives every function.
    expect(roleStatements(resources, writer)).toEqual([
      {
        Effect: 'Allow',
        Action: [
          'cloudfront-keyvaluestore:DescribeKeyValueStore',
          'cloudfront-keyvaluestore:GetKey',
          'cloudfront-keyvaluestore:PutKey',
        ],
        Resource: store,
      },
    ]);
    const writerRole = resources[writer.Properties.Role['Fn::GetAtt'][0]].Properties;
    expect(JSON.stringify(writerRole.ManagedPolicyArns)).toBe(
      JSON.stringify([
        {
          'Fn::Join': [
            '',
            ['arn:', { Ref: 'AWS::Partition' }, ':iam::aws:policy/service-role/AWSLambdaBasicExecutionRole'],
          ],
        },
      ]),
    );
    expect(writer.Properties.Environment.Variables).toEqual({ ISOATLAS_KVS_ARN: store });
    expect(writer.Properties.Runtime).toBe(meter.Properties.Runtime);
    // No other role of the stack may write to the store, whatever its statements say.
    const writes = /^cloudfront-keyvaluestore:(Put|Update|Delete|\*)|^cloudfront-keyvaluestore:\*$|^\*$/;
    const writerRoleId = writer.Properties.Role['Fn::GetAtt'][0];
    for (const [id, policy] of ofType(resources, 'AWS::IAM::Policy'))
      for (const st of policy.Properties.PolicyDocument.Statement)
        if (asList(st.Action).some((a: string) => writes.test(a)))
          expect(policy.Properties.Roles, `${id} writes the store`).toEqual([{ Ref: writerRoleId }]);
    // The meter: no store write; it invokes the writer (any version of it) and nothing else.
    const meterStatements = roleStatements(resources, meter);
    expect(meterStatements.flatMap((st) => asList(st.Action)).filter((a: string) => writes.test(a))).toEqual([]);
    const invoke = meterStatements.filter((st) => asList(st.Action).some((a: string) => a.startsWith('lambda:')));
    expect(invoke).toEqual([
      {
        Effect: 'Allow',
        Action: 'lambda:InvokeFunction',
        Resource: [
          { 'Fn::GetAtt': [writerId, 'Arn'] },
          { 'Fn::Join': ['', [{ 'Fn::GetAtt': [writerId, 'Arn'] }, ':*']] },
        ],
      },
    ]);
    expect(meter.Properties.Environment.Variables.ISOATLAS_MARK_WRITER).toEqual({ Ref: writerId });
    // Invoked synchronously by the meter only: no asynchronous retries or destinations of its own.
    expect(
      ofType(resources, 'AWS::Lambda::EventInvokeConfig').map(([, c]) => c.Properties.FunctionName),
    ).not.toContainEqual({ Ref: writerId });
    // Its lines expire, in a group of the stack's own.
    const group = byRef(resources, writer.Properties.LoggingConfig.LogGroup);
    expect([group.Type, group.Properties.RetentionInDays]).toEqual(['AWS::Logs::LogGroup', 30]);
  });

  it('WAF logs, when on, go to an aws-waf-logs- group with Authorization redacted', () => {
    const { resources } = synth({ access: { ...ACCESS, wafLogs: true } });
    const [, logging] = only(resources, 'AWS::WAFv2::LoggingConfiguration');
    expect(logging.Properties.RedactedFields).toEqual([{ SingleHeader: { Name: 'authorization' } }]);
    const wafGroup = ofType(resources, 'AWS::Logs::LogGroup').find(([, g]) =>
      String(g.Properties.LogGroupName).startsWith('aws-waf-logs-'),
    );
    expect(wafGroup).toBeDefined();
    expect(JSON.stringify(logging.Properties.LogDestinationConfigs)).toContain(':log-group:');
    expect(JSON.stringify(logging.Properties.LogDestinationConfigs)).not.toContain(':*');
    expect(ofType(synth({ access: ACCESS }).resources, 'AWS::WAFv2::LoggingConfiguration')).toHaveLength(0);
  });

  it('where keys are sent, WAF data protection replaces Authorization in every record, rate-rule details included', () => {
    const protectionOf = (props: Partial<IsoatlasCdnProps>) =>
      only(synth(props).resources, 'AWS::WAFv2::WebACL')[1].Properties.DataProtectionConfig;
    for (const access of [{ ...ACCESS, wafLogs: true }, ACCESS, { ...ACCESS, mode: 'open' as const }]) {
      const { DataProtections } = protectionOf({ access });
      const header = DataProtections.filter(
        (d: any) =>
          d.Field.FieldType === 'SINGLE_HEADER' &&
          d.Field.FieldKeys.map((k: string) => k.toLowerCase()).includes('authorization'),
      );
      expect(header).toHaveLength(1);
      expect(['SUBSTITUTION', 'HASH']).toContain(header[0].Action);
      // Excluding either would let the key through: rateBasedRuleList holds the per-key rules' aggregation key.
      expect(header[0].ExcludeRateBasedDetails ?? false).toBe(false);
      expect(header[0].ExcludeRuleMatchDetails ?? false).toBe(false);
    }
    // Every rate rule that aggregates on a header aggregates on one the protection covers.
    const acl = only(synth({ access: { ...ACCESS, wafLogs: true } }).resources, 'AWS::WAFv2::WebACL')[1];
    const protectedHeaders = acl.Properties.DataProtectionConfig.DataProtections.filter(
      (d: any) => d.Field.FieldType === 'SINGLE_HEADER',
    ).flatMap((d: any) => d.Field.FieldKeys.map((k: string) => k.toLowerCase()));
    const aggregated = acl.Properties.Rules.flatMap((r: any) => r.Statement.RateBasedStatement?.CustomKeys ?? [])
      .map((k: any) => k.Header?.Name?.toLowerCase())
      .filter(Boolean);
    expect(aggregated.length).toBeGreaterThan(0);
    for (const name of aggregated) expect(protectedHeaders).toContain(name);
    // No keys, nothing to protect (and sampled requests stay on).
    expect(protectionOf({})).toBeUndefined();
  });
});

describe('alarms', () => {
  const alarms = (resources: Resources) => ofType(resources, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
  /** The alarms watching a metric (by namespace and name, in a plain alarm or a metric-math one). */
  const watching = (resources: Resources, namespace: string, metricName: string) =>
    alarms(resources).filter((a) =>
      a.Namespace
        ? a.Namespace === namespace && a.MetricName === metricName
        : (a.Metrics ?? []).some(
            (m: any) => m.MetricStat?.Metric.Namespace === namespace && m.MetricStat?.Metric.MetricName === metricName,
          ),
    );
  const dims = (list: { Name: string; Value: unknown }[]) => Object.fromEntries(list.map((d) => [d.Name, d.Value]));

  it('every arrangement watches CloudFront 5xx and WAF blocks, each alarm notifying one topic on alarm and on clearing', () => {
    for (const props of [{}, { access: ACCESS }, { access: { ...ACCESS, mode: 'open' as const } }]) {
      const { resources, template } = synth(props);
      const [topicId] = only(resources, 'AWS::SNS::Topic');
      const [distributionId] = only(resources, 'AWS::CloudFront::Distribution');
      const acl = only(resources, 'AWS::WAFv2::WebACL')[1];

      const [cdn] = watching(resources, 'AWS/CloudFront', '5xxErrorRate');
      expect(dims(cdn.Dimensions)).toEqual({ DistributionId: { Ref: distributionId }, Region: 'Global' });
      const [blocked] = watching(resources, 'AWS/WAFV2', 'BlockedRequests');
      const wafMetrics = blocked.Metrics.filter((m: any) => m.MetricStat);
      expect(wafMetrics.map((m: any) => m.MetricStat.Metric.MetricName).sort()).toEqual([
        'AllowedRequests',
        'BlockedRequests',
      ]);
      // A CloudFront web ACL's metrics have no Region dimension; WebACL is its metric name.
      for (const m of wafMetrics)
        expect(dims(m.MetricStat.Metric.Dimensions)).toEqual({
          WebACL: acl.Properties.VisibilityConfig.MetricName,
          Rule: 'ALL',
        });
      expect(blocked.Metrics.find((m: any) => m.Expression).Expression).toMatch(/blocked \/ \(blocked \+ allowed\)/);

      for (const a of alarms(resources)) {
        expect(a.AlarmActions).toEqual([{ Ref: topicId }]);
        expect(a.OKActions).toEqual([{ Ref: topicId }]);
        expect(a.TreatMissingData).toBe('notBreaching');
        expect(a.AlarmDescription).toMatch(/OPERATIONS: Alarms/);
      }
      expect(Object.keys(template.toJSON().Outputs)).toContain('AlarmTopicArn');
      // TLS only to the topic.
      const policy = only(resources, 'AWS::SNS::TopicPolicy')[1];
      expect(JSON.stringify(policy.Properties.PolicyDocument)).toContain('aws:SecureTransport');
    }
    expect(watching(synth().resources, 'AWS/Lambda', 'Errors')).toHaveLength(0);
  });

  it('with a day meter, watches its errors and its failure queue', () => {
    const { resources } = synth({ access: ACCESS });
    const meterId = Object.entries(resources).find(([, r]) => r === functionWithHandler(resources, 'index.meter'))![0];
    const [errors] = watching(resources, 'AWS/Lambda', 'Errors');
    expect(dims(errors.Dimensions)).toEqual({ FunctionName: { Ref: meterId } });
    const [queueId] = only(resources, 'AWS::SQS::Queue');
    const [depth] = watching(resources, 'AWS/SQS', 'ApproximateNumberOfMessagesVisible');
    expect(dims(depth.Dimensions)).toEqual({ QueueName: { 'Fn::GetAtt': [queueId, 'QueueName'] } });
    expect(depth.Threshold).toBe(1);
    expect(depth.ComparisonOperator).toBe('GreaterThanOrEqualToThreshold');
  });

  it("with keys, watches the key store's size at publish's warning share, from the mark writer's daily report", () => {
    for (const access of [ACCESS, { ...ACCESS, mode: 'open' as const }]) {
      const { resources } = synth({ access });
      const [storeId] = only(resources, 'AWS::CloudFront::KeyValueStore');
      const [size] = watching(resources, KEY_STORE_METRICS.namespace, KEY_STORE_METRICS.bytes);
      expect(dims(size.Dimensions)).toEqual({ [KEY_STORE_METRICS.dimension]: { 'Fn::GetAtt': [storeId, 'Arn'] } });
      expect(size.Threshold).toBe(Math.floor(KVS_SIZE_LIMIT_BYTES * KVS_WARN_FRACTION));
      expect(size.Statistic).toBe('Maximum');
      // The writer is asked every day with no marks, so the metric has a point every day.
      const writer = functionWithHandler(resources, 'index.writeMarks');
      const writerId = Object.entries(resources).find(([, r]) => r === writer)![0];
      const [, rule] = only(resources, 'AWS::Events::Rule');
      expect(rule.Properties.ScheduleExpression).toBe('rate(1 day)');
      expect(rule.Properties.Targets).toEqual([
        expect.objectContaining({ Arn: { 'Fn::GetAtt': [writerId, 'Arn'] }, Input: '[]' }),
      ]);
    }
    expect(watching(synth().resources, KEY_STORE_METRICS.namespace, KEY_STORE_METRICS.bytes)).toHaveLength(0);
  });

  it('emails the address given at deploy, and refuses what is not one', () => {
    const subscriptionsOf = (props: Partial<IsoatlasCdnProps>) =>
      ofType(synth(props).resources, 'AWS::SNS::Subscription').map(([, r]) => r.Properties);
    expect(subscriptionsOf({})).toHaveLength(0);
    const [email] = subscriptionsOf({ alarmEmail: 'curator@example.org' });
    expect(email).toMatchObject({ Protocol: 'email', Endpoint: 'curator@example.org' });
    expect(() => synth({ alarmEmail: 'curator at example.org' })).toThrow(/email address/);
  });
});

describe('logs', () => {
  let regional: Promise<Resources[]> | undefined;
  /** The two stacks of B with the bucket in another region, where CDK adds its own functions (the
   * writer and reader of the cross-region reference). */
  function regionalTemplates(): Promise<Resources[]> {
    regional ??= (async () => {
      const app = new App({ outdir: mkdtempSync(join(work, 'out-')), context: SYNTH_CONTEXT });
      const cdn = new IsoatlasCdnStack(app, 'Cdn', {
        bucketName: BUCKET,
        bucketRegion: 'eu-west-1',
        edgeCodeDir: await regionalBundle(),
        access: ACCESS,
      });
      new IsoatlasBucketStack(app, 'Bucket', {
        bucketName: BUCKET,
        distributionArn: cdn.distribution.distributionArn,
        env: { account: '111111111111', region: 'eu-west-1' },
      });
      const assembly = app.synth();
      return ['Cdn', 'Bucket'].map((n) => assembly.getStackByName(n).template.Resources as Resources);
    })();
    return regional;
  }

  it("every log group of every arrangement expires, and every Lambda function, CDK's own included, writes to one of its stack", async () => {
    const arrangements: [string, Resources][] = [
      ['none', synth().resources],
      ['A', synth({ access: { mode: 'open' } }).resources],
      ['B', synth({ access: ACCESS }).resources],
      ['B with WAF logs', synth({ access: { ...ACCESS, wafLogs: true } }).resources],
      ...(await regionalTemplates()).map((r, i): [string, Resources] => [['B, CDN stack', 'B, bucket stack'][i], r]),
    ];
    const functionsSeen = new Set<string>();
    for (const [name, resources] of arrangements) {
      for (const [id, group] of ofType(resources, 'AWS::Logs::LogGroup'))
        expect(group.Properties.RetentionInDays, `${name}: ${id}`).toBeGreaterThan(0);
      for (const [id, fn] of ofType(resources, 'AWS::Lambda::Function')) {
        functionsSeen.add(fn.Properties.Handler);
        const ref = fn.Properties.LoggingConfig?.LogGroup;
        expect(ref, `${name}: ${id} names no log group of the stack`).toEqual({ Ref: expect.any(String) });
        expect(resources[ref.Ref]?.Type, `${name}: ${id}`).toBe('AWS::Logs::LogGroup');
      }
    }
    // The origin function, the meter, the mark writer, and CDK's providers of the cross-region reference.
    expect([...functionsSeen].sort()).toEqual([
      '__entrypoint__.handler',
      'index.handler',
      'index.meter',
      'index.writeMarks',
    ]);
    // The key gate's group (CloudFront Functions log to /aws/cloudfront/function/<name>) in every
    // arrangement, since the gate runs in each.
    for (const [name, resources] of arrangements.slice(0, 4)) {
      const gate = only(resources, 'AWS::CloudFront::Function')[1].Properties.Name;
      expect(
        ofType(resources, 'AWS::Logs::LogGroup').map(([, g]) => g.Properties.LogGroupName),
        name,
      ).toContain(`/aws/cloudfront/function/${gate}`);
    }
  });

  it("names the origin function's group, the same in every region (Lambda@Edge writes under it there); the stack owns us-east-1's", () => {
    const { resources, template } = synth();
    const origin = functionWithHandler(resources, 'index.handler');
    const group = byRef(resources, origin.Properties.LoggingConfig.LogGroup);
    // A fixed name, not Lambda's default /aws/lambda/<name> (to which Lambda@Edge adds a region prefix).
    expect(group.Properties).toMatchObject({ LogGroupName: '/isoatlas/Test/origin-request', RetentionInDays: 30 });
    expect(template.toJSON().Outputs.OriginLogGroupName.Value).toEqual({
      Ref: origin.Properties.LoggingConfig.LogGroup.Ref,
    });
  });
});

describe('guards', () => {
  it('refuses a bundle built for other settings, and other regions', () => {
    expect(() => synth({ bucketName: 'another-bucket' })).toThrow(/not built for this stack/);
    expect(() => synth({ edgeCodeDir: join(work, 'nowhere') })).toThrow(/does not exist/);
    expect(() => synth({ env: { account: '111111111111', region: 'eu-west-1' } })).toThrow(/us-east-1/);
    expect(() => synth({ bucketName: 'Not_A_Bucket', edgeCodeDir: plainBundle })).toThrow(/bucket name/);
  });

  it('outputs bucket, distribution id and domain, the key store (for publish --kvs), and the meter table with access', () => {
    const outputs = (r: Template) => Object.keys(r.toJSON().Outputs ?? {}).sort();
    expect(outputs(synth().template)).toEqual(
      expect.arrayContaining(['BucketName', 'DistributionDomainName', 'DistributionId', 'KeyValueStoreArn']),
    );
    expect(outputs(synth().template)).not.toContain('MeterTableName');
    expect(outputs(synth({ access: ACCESS }).template)).toEqual(
      expect.arrayContaining(['KeyValueStoreArn', 'MeterTableName', 'OriginLogGroupName']),
    );
  });
});

describe('npm run synth (infra/app.ts)', () => {
  function run(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
    // Only the settings given here: none of the caller's ISOATLAS_* variables leak in. The node flags
    // change how V8 compiles, not what runs: the command is npm run synth's.
    const base = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('ISOATLAS_') && k !== 'CDK_DEFAULT_ACCOUNT'),
    );
    return new Promise((resolve) => {
      execFile(
        join(REPO, 'node_modules/.bin/tsx'),
        [...SYNTH_NODE_FLAGS, 'infra/app.ts'],
        { cwd: REPO, env: { ...base, ...env }, timeout: 120_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as any).code ?? 1) : 0, stdout, stderr }),
      );
    });
  }
  const template = (outdir: string) =>
    JSON.parse(readFileSync(join(outdir, 'IsoatlasCdn.template.json'), 'utf8')) as { Resources: Resources };

  it('synthesizes offline into the given directory, with and without access; refuses an unknown arrangement', async () => {
    const plain = join(work, 'synth-plain');
    const keyed = join(work, 'synth-keyed');
    const regional = join(work, 'synth-regional');
    const [a, b, c, d] = await Promise.all([
      run({
        ISOATLAS_CDK_OUT: plain,
        ISOATLAS_BUCKET: 'isoatlas-synth-test',
        ISOATLAS_WAF_LIMIT: '3000',
        ISOATLAS_ACCOUNT: '222222222222',
      }),
      run({ ISOATLAS_CDK_OUT: keyed, ISOATLAS_ACCESS: 'key-required' }),
      run({ ISOATLAS_CDK_OUT: join(work, 'synth-refused'), ISOATLAS_ACCESS: 'keyed' }),
      run({ ISOATLAS_CDK_OUT: regional, ISOATLAS_BUCKET_REGION: 'eu-west-1' }),
    ]);
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(/IsoatlasBucket\.template\.json \(the bucket, in eu-west-1; deploy after IsoatlasCdn\)/);
    expect(
      only(
        JSON.parse(readFileSync(join(regional, 'IsoatlasBucket.template.json'), 'utf8')).Resources,
        'AWS::S3::Bucket',
      )[1].Properties.BucketName,
    ).toBe('isoatlas-atlas-example');
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout).toMatch(/template .*IsoatlasCdn\.template\.json/);
    expect(a.stdout).toMatch(/edge code .*KiB/);
    const t = template(plain);
    expect(dataBucket(t.Resources)[1].Properties.BucketName).toBe('isoatlas-synth-test');
    expect(
      only(t.Resources, 'AWS::WAFv2::WebACL')[1].Properties.Rules.find((r: any) => r.Statement.RateBasedStatement)
        .Statement.RateBasedStatement.Limit,
    ).toBe(3000);
    expect(ofType(t.Resources, 'AWS::DynamoDB::Table')).toHaveLength(0);
    expect(JSON.stringify(only(t.Resources, 'AWS::Lambda::Function')[1].Properties.Code)).toContain(
      '222222222222-us-east-1',
    );
    // The staged asset is the bundle app.ts built for the same bucket.
    const asset = readdirSync(plain).find((f) => f.startsWith('asset.'))!;
    expect(readFileSync(join(plain, asset, 'index.js'), 'utf8')).toContain('"isoatlas-synth-test"');

    expect(b.code, b.stderr).toBe(0);
    // Keys on the default certificate: said on standard error, in capitals, with what to do.
    expect(b.stderr).toMatch(/\*\*\* WARNING \(IsoatlasCdn\) \*\*\*\nAPI keys would travel over TLS 1\.0/);
    expect(b.stderr).toMatch(/ISOATLAS_DOMAIN and ISOATLAS_CERTIFICATE_ARN/);
    expect(a.stderr).not.toMatch(/WARNING/);
    const k = template(keyed);
    expect(only(k.Resources, 'AWS::CloudFront::Function')[1].Properties.FunctionConfig.Runtime).toBe(
      'cloudfront-js-2.0',
    );
    expect(ofType(k.Resources, 'AWS::CloudFront::KeyValueStore')).toHaveLength(1);
    expect(functionWithHandler(k.Resources, 'index.meter').Properties.Runtime).toBe('nodejs24.x');
    expect(b.stdout).toMatch(/access +key-required \(key gate \+ KeyValueStore\)/);

    expect(c.code).not.toBe(0);
    expect(c.stderr).toContain('ISOATLAS_ACCESS must be open, key-required or empty');
    expect(existsSync(join(work, 'synth-refused', 'IsoatlasCdn.template.json'))).toBe(false);
  });
});
