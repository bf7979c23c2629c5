// The CDN stack (infra/stack.ts) as CloudFormation: synthesized in-process from a real edge bundle
// and checked resource by resource, plus `npm run synth` (infra/app.ts) run as a child process.
// Everything is offline: no AWS account, no lookups.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { Template } from 'aws-cdk-lib/assertions';
import { bundleEdge, bundleMeter } from '../build/bundle-edge.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { KEY_GATE_MAX_BYTES, keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { routes } from '../edge/contract/routes.js';
import { createHandler } from '../edge/handler.js';
import { validate } from './helpers/schemas.js';
import { IsoatlasBucketStack } from '../infra/bucket.js';
import { ACCESS_WINDOW_SECONDS, IsoatlasCdnStack, SYNTH_CONTEXT, WAF_WINDOW_SECONDS, edgeBundleConfig, type IsoatlasAccessProps, type IsoatlasCdnProps } from '../infra/stack.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const BUCKET = 'isoatlas-test-bucket';
let ACCESS: IsoatlasAccessProps;

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string };
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

function synth(props: Partial<IsoatlasCdnProps> = {}): { stack: IsoatlasCdnStack; template: Template; resources: Resources } {
  const app = new App({ outdir: mkdtempSync(join(work, 'out-')), context: SYNTH_CONTEXT });
  const stack = new IsoatlasCdnStack(app, 'Test', {
    bucketName: BUCKET,
    edgeCodeDir: plainBundle,
    ...props,
  });
  const template = Template.fromStack(stack);
  return { stack, template, resources: template.toJSON().Resources as Resources };
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
const config = (resources: Resources) => only(resources, 'AWS::CloudFront::Distribution')[1].Properties.DistributionConfig;
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
    new wafv2.CfnRegexPatternSet(stack, 'Keys', { scope: 'CLOUDFRONT', description: 'keys (of a tier)', regularExpressionList: ['^x$'] });
    expect(() => app.synth()).toThrow(/F3031/);
    // The same stack without the context synthesizes: the failure above is the flag's doing.
    const lenient = new App({ outdir: mkdtempSync(join(work, 'out-')) });
    const same = new Stack(lenient, 'Invalid', { env: { account: '111111111111', region: 'us-east-1' } });
    new wafv2.CfnRegexPatternSet(same, 'Keys', { scope: 'CLOUDFRONT', description: 'keys (of a tier)', regularExpressionList: ['^x$'] });
    expect(() => lenient.synth()).not.toThrow();
  });

  it('passes every arrangement: none, A, B, and B with the bucket in another region and a custom domain', async () => {
    for (const props of [{}, { access: { mode: 'open' as const } }, { access: ACCESS }]) {
      const { template } = synth(props);
      expect(Object.keys(template.toJSON().Resources).length).toBeGreaterThan(0);
    }
    const regional = join(work, 'edge-eu-validated');
    await bundleEdge({ outDir: regional, ...edgeBundleConfig({ bucketName: BUCKET, bucketRegion: 'eu-west-1' }) });
    const app = new App({ outdir: mkdtempSync(join(work, 'out-')), context: SYNTH_CONTEXT });
    const cdn = new IsoatlasCdnStack(app, 'Cdn', {
      bucketName: BUCKET,
      bucketRegion: 'eu-west-1',
      edgeCodeDir: regional,
      access: ACCESS,
      customDomain: { names: ['atlas.example.org'], certificateArn: 'arn:aws:acm:us-east-1:111111111111:certificate/12345678-1234-1234-1234-123456789012' },
    });
    new IsoatlasBucketStack(app, 'Bucket', { bucketName: BUCKET, distributionArn: cdn.distribution.distributionArn, env: { account: '111111111111', region: 'eu-west-1' } });
    // A finding in either stack would throw here.
    const assembly = app.synth();
    expect(Object.keys(assembly.getStackByName('Bucket').template.Resources)).not.toHaveLength(0);
    expect(assembly.getStackByName('Cdn').messages.filter((m) => m.level !== 'info')).toEqual([]);
  });

  it('passes a tier of any name: its rule is named from it and matches on its letter', () => {
    const tiers = { standard: { per_minute: 60, per_day: 5000 }, 'gold (beta)_1': { per_minute: 600 } };
    const { resources } = synth({ access: { ...ACCESS, config: { tier_letters: { 'gold (beta)_1': 'g' }, key_required: { tiers } } } });
    const rule = only(resources, 'AWS::WAFv2::WebACL')[1].Properties.Rules.find((r: any) => r.Name === 'isoatlas-rate-per-key-gold--beta--1');
    expect(rule.Statement.RateBasedStatement.ScopeDownStatement.RegexMatchStatement.RegexString).toBe('^bearer isoatlas_g[a-z2-7]{8}_');
    expect(ofType(resources, 'AWS::WAFv2::RegexPatternSet')).toHaveLength(0);
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
      expect(gate.Properties.FunctionConfig.KeyValueStoreAssociations).toEqual([{ KeyValueStoreARN: { 'Fn::GetAtt': [storeId, 'Arn'] } }]);
      expect(gate.Properties.AutoPublish).toBe(true);
      expect(gate.Properties.FunctionCode).toBe(keyGateCode(keyGateSettings(resolveAccessConfig({}, mode))));
      expect(Buffer.byteLength(gate.Properties.FunctionCode)).toBeLessThanOrEqual(KEY_GATE_MAX_BYTES);
      // No request path reaches the bucket without the gate: the default behaviour (current.json and
      // releases.json and anything unmatched), releases/* (structures), objects/* and api/v1/*.
      const all = [config(resources).DefaultCacheBehavior, ...config(resources).CacheBehaviors];
      expect(all).toHaveLength(4);
      for (const b of all) {
        expect(b.FunctionAssociations, b.PathPattern ?? 'default').toEqual([{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [id, 'FunctionARN'] } }]);
        expect((b.LambdaFunctionAssociations ?? []).map((a: any) => a.EventType)).not.toContain('viewer-request');
      }
      expect(behaviour(resources, 'api/v1/*').LambdaFunctionAssociations.map((a: any) => a.EventType)).toEqual(['origin-request']);
      expect(config(resources).IPV6Enabled).toBe(false);
    });
  }

  it('key-required: per-minute WAF limits per IP and per key (on Authorization), each a 429 with Retry-After and a problem body; no samples', () => {
    const { resources } = synth({ access: ACCESS });
    const acl = only(resources, 'AWS::WAFv2::WebACL')[1].Properties;
    expect(acl.Rules.map((r: any) => r.Name)).toEqual(['isoatlas-rate-per-ip', 'isoatlas-rate-per-key', 'isoatlas-rate-per-key-plus']);
    const [ip, key, plus] = acl.Rules.map((r: any) => r.Statement.RateBasedStatement);
    expect(ip).toEqual({ AggregateKeyType: 'IP', EvaluationWindowSec: 60, Limit: 1200 });
    expect(key).toMatchObject({ AggregateKeyType: 'CUSTOM_KEYS', EvaluationWindowSec: 60, Limit: 60 });
    // Counted per header lowercased: the gate admits a key spelled one way up to the scheme's case.
    const lowercased = [{ Priority: 0, Type: 'LOWERCASE' }];
    expect(key.CustomKeys).toEqual([{ Header: { Name: 'authorization', TextTransformations: lowercased } }]);
    expect(plus.CustomKeys).toEqual(key.CustomKeys);
    // The default tier's rule counts keyed requests whose id carries no other tier's letter.
    const [has, notPlus] = key.ScopeDownStatement.AndStatement.Statements;
    expect(has.SizeConstraintStatement).toMatchObject({ FieldToMatch: { SingleHeader: { Name: 'authorization' } }, ComparisonOperator: 'GT', Size: 0 });
    const inPlus = { RegexMatchStatement: { RegexString: '^bearer isoatlas_p[a-z2-7]{8}_', FieldToMatch: { SingleHeader: { Name: 'authorization' } }, TextTransformations: lowercased } };
    expect(notPlus).toEqual({ NotStatement: { Statement: inPlus } });
    // The plus tier's rule: its own limit, on every key whose id starts with its letter; no sets, no outputs for them.
    expect(plus).toMatchObject({ AggregateKeyType: 'CUSTOM_KEYS', EvaluationWindowSec: 60, Limit: 600, ScopeDownStatement: inPlus });
    expect(ofType(resources, 'AWS::WAFv2::RegexPatternSet')).toHaveLength(0);
    expect(Object.keys(Template.fromStack(synth({ access: ACCESS }).stack).toJSON().Outputs).join()).not.toContain('TierPatternSet');
    for (const rule of acl.Rules) {
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
    expect(acl.Rules.map((r: any) => r.Name)).toEqual(['isoatlas-anonymous-per-ip', 'isoatlas-keyed-per-ip', 'isoatlas-rate-per-key', 'isoatlas-rate-per-key-plus']);
    const [anonymous, keyed, key] = acl.Rules.map((r: any) => r.Statement.RateBasedStatement);
    expect(anonymous).toMatchObject({ AggregateKeyType: 'IP', EvaluationWindowSec: 60, Limit: 900 });
    expect(anonymous.ScopeDownStatement.NotStatement.Statement.SizeConstraintStatement.FieldToMatch).toEqual({ SingleHeader: { Name: 'authorization' } });
    expect(keyed).toMatchObject({ AggregateKeyType: 'IP', EvaluationWindowSec: 60, Limit: 24000, ScopeDownStatement: anonymous.ScopeDownStatement.NotStatement.Statement });
    expect(JSON.parse(acl.CustomResponseBodies[acl.Rules[1].Action.Block.CustomResponse.CustomResponseBodyKey].Content).detail).toContain('24000 requests in a minute from one IP address with API keys');
    // The ceiling follows the config: twice the highest tier's unless set.
    const raised = only(synth({ access: { mode: 'open', config: { open: { keyed_per_ip: { per_minute: 50000 } } } } }).resources, 'AWS::WAFv2::WebACL')[1].Properties;
    expect(raised.Rules[1].Statement.RateBasedStatement.Limit).toBe(50000);
    expect(key).toMatchObject({ AggregateKeyType: 'CUSTOM_KEYS', Limit: 3000 });
    expect(ofType(resources, 'AWS::Lambda::Function')).toHaveLength(1);
    expect(ofType(resources, 'AWS::DynamoDB::Table')).toHaveLength(0);
  });

  it('key-required: the day meter reads the gate\'s log lines and may write counters and the store, nothing more', () => {
    const { resources } = synth({ access: ACCESS });
    const meter = functionWithHandler(resources, 'index.meter');
    // Lambda@Edge stays on Node.js 22 (its newest); the meter is regional and runs the newest Lambda has.
    expect(meter.Properties.Runtime).toBe('nodejs24.x');
    const [tableId, table] = only(resources, 'AWS::DynamoDB::Table');
    expect(table.Properties.KeySchema).toEqual([{ AttributeName: 'counter', KeyType: 'HASH' }]);
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at', Enabled: true });
    const [storeId] = only(resources, 'AWS::CloudFront::KeyValueStore');
    const env = meter.Properties.Environment.Variables;
    expect(env.ISOATLAS_METER_TABLE).toEqual({ Ref: tableId });
    expect(env.ISOATLAS_KVS_ARN).toEqual({ 'Fn::GetAtt': [storeId, 'Arn'] });
    expect(JSON.parse(env.ISOATLAS_ACCESS_CONFIG)).toEqual(resolveAccessConfig({}, 'key-required'));
    const statements = roleStatements(resources, meter);
    expect(statements.flatMap((st) => asList(st.Action)).sort()).toEqual([
      'cloudfront-keyvaluestore:DescribeKeyValueStore',
      'cloudfront-keyvaluestore:GetKey',
      'cloudfront-keyvaluestore:PutKey',
      'dynamodb:UpdateItem',
    ]);
    const [logsId, group] = only(resources, 'AWS::Logs::LogGroup');
    const gateName = only(resources, 'AWS::CloudFront::Function')[1].Properties.Name;
    expect(group.Properties.LogGroupName).toBe(`/aws/cloudfront/function/${gateName}`);
    const [, sub] = only(resources, 'AWS::Logs::SubscriptionFilter');
    expect(sub.Properties).toMatchObject({ LogGroupName: { Ref: logsId }, FilterPattern: '"isoatlas-meter"' });
    expect(sub.Properties.DestinationArn['Fn::GetAtt'][0]).toBe(Object.entries(resources).find(([, r]) => r === meter)![0]);
    expect(gateId(resources)).toBeDefined();
    expect(() => synth({ access: { mode: 'key-required' } })).toThrow(/day meter/);
  });

  it('WAF logs, when on, go to an aws-waf-logs- group with Authorization redacted', () => {
    const { resources } = synth({ access: { ...ACCESS, wafLogs: true } });
    const [, logging] = only(resources, 'AWS::WAFv2::LoggingConfiguration');
    expect(logging.Properties.RedactedFields).toEqual([{ SingleHeader: { Name: 'authorization' } }]);
    const wafGroup = ofType(resources, 'AWS::Logs::LogGroup').find(([, g]) => String(g.Properties.LogGroupName).startsWith('aws-waf-logs-'));
    expect(wafGroup).toBeDefined();
    expect(JSON.stringify(logging.Properties.LogDestinationConfigs)).toContain(':log-group:');
    expect(JSON.stringify(logging.Properties.LogDestinationConfigs)).not.toContain(':*');
    expect(ofType(synth({ access: ACCESS }).resources, 'AWS::WAFv2::LoggingConfiguration')).toHaveLength(0);
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
    expect(outputs(synth().template)).toEqual(expect.arrayContaining(['BucketName', 'DistributionDomainName', 'DistributionId', 'KeyValueStoreArn']));
    expect(outputs(synth().template)).not.toContain('MeterTableName');
    expect(outputs(synth({ access: ACCESS }).template)).toEqual(expect.arrayContaining(['KeyValueStoreArn', 'MeterTableName']));
  });
});

describe('npm run synth (infra/app.ts)', () => {
  function run(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
    // Only the settings given here: none of the caller's ISOATLAS_* variables leak in.
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ISOATLAS_') && k !== 'CDK_DEFAULT_ACCOUNT'));
    return new Promise((resolve) => {
      execFile(join(REPO, 'node_modules/.bin/tsx'), ['infra/app.ts'], { cwd: REPO, env: { ...base, ...env }, timeout: 120_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as any).code ?? 1) : 0, stdout, stderr }),
      );
    });
  }
  const template = (outdir: string) => JSON.parse(readFileSync(join(outdir, 'IsoatlasCdn.template.json'), 'utf8')) as { Resources: Resources };

  it('synthesizes offline into the given directory, with and without access; refuses an unknown arrangement', async () => {
    const plain = join(work, 'synth-plain');
    const keyed = join(work, 'synth-keyed');
    const regional = join(work, 'synth-regional');
    const [a, b, c, d] = await Promise.all([
      run({ ISOATLAS_CDK_OUT: plain, ISOATLAS_BUCKET: 'isoatlas-synth-test', ISOATLAS_WAF_LIMIT: '3000', ISOATLAS_ACCOUNT: '222222222222' }),
      run({ ISOATLAS_CDK_OUT: keyed, ISOATLAS_ACCESS: 'key-required' }),
      run({ ISOATLAS_CDK_OUT: join(work, 'synth-refused'), ISOATLAS_ACCESS: 'keyed' }),
      run({ ISOATLAS_CDK_OUT: regional, ISOATLAS_BUCKET_REGION: 'eu-west-1' }),
    ]);
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(/IsoatlasBucket\.template\.json \(the bucket, in eu-west-1; deploy after IsoatlasCdn\)/);
    expect(only(JSON.parse(readFileSync(join(regional, 'IsoatlasBucket.template.json'), 'utf8')).Resources, 'AWS::S3::Bucket')[1].Properties.BucketName).toBe('isoatlas-atlas-example');
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout).toMatch(/template .*IsoatlasCdn\.template\.json/);
    expect(a.stdout).toMatch(/edge code .*KiB/);
    const t = template(plain);
    expect(dataBucket(t.Resources)[1].Properties.BucketName).toBe('isoatlas-synth-test');
    expect(only(t.Resources, 'AWS::WAFv2::WebACL')[1].Properties.Rules[0].Statement.RateBasedStatement.Limit).toBe(3000);
    expect(ofType(t.Resources, 'AWS::DynamoDB::Table')).toHaveLength(0);
    expect(JSON.stringify(only(t.Resources, 'AWS::Lambda::Function')[1].Properties.Code)).toContain('222222222222-us-east-1');
    // The staged asset is the bundle app.ts built for the same bucket.
    const asset = readdirSync(plain).find((f) => f.startsWith('asset.'))!;
    expect(readFileSync(join(plain, asset, 'index.js'), 'utf8')).toContain('"isoatlas-synth-test"');

    expect(b.code, b.stderr).toBe(0);
    const k = template(keyed);
    expect(only(k.Resources, 'AWS::CloudFront::Function')[1].Properties.FunctionConfig.Runtime).toBe('cloudfront-js-2.0');
    expect(ofType(k.Resources, 'AWS::CloudFront::KeyValueStore')).toHaveLength(1);
    expect(functionWithHandler(k.Resources, 'index.meter').Properties.Runtime).toBe('nodejs24.x');
    expect(b.stdout).toMatch(/access +key-required \(key gate \+ KeyValueStore\)/);

    expect(c.code).not.toBe(0);
    expect(c.stderr).toContain('ISOATLAS_ACCESS must be open, key-required or empty');
    expect(existsSync(join(work, 'synth-refused', 'IsoatlasCdn.template.json'))).toBe(false);
  });
});
