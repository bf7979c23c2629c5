// The CDN deployment as code: a private bucket holding published releases, a CloudFront distribution
// in front of it (the bucket is reached only through Origin Access Control), the edge bundle as two
// Lambda@Edge functions (origin-request serves /api/v1/*, viewer-request checks keys and quotas),
// the DynamoDB tables the viewer function counts in, and a WAF web ACL with a coarse per-IP limit.
//
// Everything here synthesizes offline: no lookups, no context queries, an explicit account and region.
// The region is always us-east-1: Lambda@Edge functions and CLOUDFRONT-scoped web ACLs must be created
// there, and keeping the whole stack in that one region avoids cross-region references (which would
// need SSM lookups at deploy time).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CfnOutput, Duration, RemovalPolicy, Stack, Token, type StackProps } from 'aws-cdk-lib';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import { resolveAccessConfig, type AccessMode } from '../edge/access/config.js';
import { QUOTA_TABLE_KEY, QUOTA_TTL_ATTRIBUTE } from '../edge/access/stores/dynamodb.js';
import { KEYS_TABLE_KEY } from '../edge/access/stores/dynamodb-keys.js';
import { API_PREFIX } from '../edge/contract/tree.js';
import type { EdgeBundleConfig } from '../edge/lambda-entry.js';
// The cache key's query names and the CORS expose list come from the contract, never restated here.
import { EXPOSED_HEADERS, QUERY_PARAMETERS } from '../edge/contract/http.js';

/** Lambda@Edge and CloudFront-scoped WAF live in us-east-1; so does everything else in this stack. */
export const EDGE_REGION = 'us-east-1';
export const DEFAULT_ACCOUNT = '111111111111';
export const DEFAULT_WAF_REQUESTS_PER_5MIN_PER_IP = 6000;
export const DEFAULT_QUOTA_TABLE = 'isoatlas-quota';
export const DEFAULT_KEYS_TABLE = 'isoatlas-keys';
/** The newest Node.js runtime Lambda@Edge supports (AWS's Lambda@Edge restrictions page). */
const EDGE_RUNTIME = lambda.Runtime.NODEJS_22_X;
/** The window of the WAF's per-IP rate rule, which is also what its 429 says to wait. */
export const WAF_WINDOW_SECONDS = 300;
const WAF_TOO_MANY_BODY = 'too-many-requests';
/** How long CloudFront's standard logs are kept. */
export const LOG_RETENTION_DAYS = 90;

export interface IsoatlasAccessProps {
  mode: AccessMode;
  /** A partial AccessConfig (as in `--access-config limits.json`), overlaid on DEFAULT_ACCESS. */
  config?: unknown;
  /** Hex HMAC secret keying the stored key hashes (≥ 32 bytes). Baked into the edge bundle (Lambda@Edge
   * has no environment variables); it never appears in the template. */
  keySecret: string;
  quotaTableName?: string;
  keysTableName?: string;
}

export interface IsoatlasCdnProps extends StackProps {
  bucketName: string;
  /** Key prefix of the atlas in the bucket: '' or ending in '/'. */
  prefix?: string;
  /** Unset: no viewer-request function and no tables (anything reaching /api/v1/* is served). */
  access?: IsoatlasAccessProps;
  /** WAF rate-based rule: requests per client IP per 5 minutes before the IP is blocked (HTTP 429). */
  wafRequestsPer5MinPerIp?: number;
  /** Also run the AWS managed common rule set (OWASP-style checks). Off by default: it blocks requests
   * without a User-Agent and large query strings, which some scripted API clients send. */
  wafManagedCommonRules?: boolean;
  /** A directory written by build/bundle-edge.ts (`index.js` exporting handler and viewerRequest). */
  edgeCodeDir: string;
  priceClass?: cloudfront.PriceClass;
  /** A custom domain: its names and an ACM certificate for them, which CloudFront requires to be in
   * us-east-1. Both or neither; viewers then need TLS 1.2 or newer (the TLSv1.2_2021 policy). */
  customDomain?: { names: string[]; certificateArn: string };
}

/** What the edge bundle for these stack settings must be built with (build/bundle-edge.ts). Building
 * the bundle from the same settings as the stack is how the two agree on bucket, prefix and tables. */
export function edgeBundleConfig(props: Pick<IsoatlasCdnProps, 'bucketName' | 'prefix' | 'access'> & { structureBaseUrl?: string }): EdgeBundleConfig {
  const a = props.access;
  return {
    s3: { bucket: props.bucketName, region: EDGE_REGION, prefix: props.prefix ?? '' },
    structureBaseUrl: props.structureBaseUrl,
    access: a && {
      config: resolveAccessConfig(a.config, a.mode),
      region: EDGE_REGION,
      quotaTable: a.quotaTableName ?? DEFAULT_QUOTA_TABLE,
      keysTable: a.keysTableName ?? DEFAULT_KEYS_TABLE,
      keySecret: a.keySecret,
    },
  };
}

export class IsoatlasCdnStack extends Stack {
  readonly bucket: s3.Bucket;
  /** CloudFront's standard logs. */
  readonly logBucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  readonly webAcl: wafv2.CfnWebACL;
  readonly originFunction: cloudfront.experimental.EdgeFunction;
  readonly viewerFunction?: cloudfront.experimental.EdgeFunction;
  readonly quotaTable?: dynamodb.Table;
  readonly keysTable?: dynamodb.Table;

  constructor(scope: Construct, id: string, props: IsoatlasCdnProps) {
    super(scope, id, {
      description: 'isoatlas: read-only JSON API (v1) from S3 through CloudFront and Lambda@Edge',
      ...props,
      env: { account: props.env?.account ?? DEFAULT_ACCOUNT, region: props.env?.region ?? EDGE_REGION },
    });
    if (Token.isUnresolved(this.region) || this.region !== EDGE_REGION) {
      throw new Error(`IsoatlasCdnStack must be deployed to ${EDGE_REGION} (Lambda@Edge and CloudFront WAF), not ${this.region}`);
    }
    const prefix = checkPrefix(props.prefix ?? '');
    const wafLimit = checkWafLimit(props.wafRequestsPer5MinPerIp ?? DEFAULT_WAF_REQUESTS_PER_5MIN_PER_IP);
    checkBucketName(props.bucketName);
    const bundleConfig = edgeBundleConfig(props); // validates the access config and key secret early
    if (props.access && !/^[0-9a-f]{64,}$/i.test(props.access.keySecret.trim())) {
      throw new Error('access.keySecret must be at least 32 bytes written as hex (isoatlas keys uses .isoatlas/keys/secret)');
    }
    checkEdgeBundle(props.edgeCodeDir, bundleConfig);

    // ── Bucket: private, reachable only by this distribution (OAC) and the origin function's role.
    this.bucket = new s3.Bucket(this, 'AtlasBucket', {
      bucketName: props.bucketName,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED, // ACLs disabled: access is policy only
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      encryption: s3.BucketEncryption.S3_MANAGED, // SSE-KMS would need a key policy for CloudFront too
      // Releases are immutable under versioned prefixes and `isoatlas publish` keeps history, so
      // object versioning adds nothing. The bucket outlives the stack: it holds the published data.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // ── Standard logs of the distribution (legacy S3 delivery): the record of who asked for what,
    // and the input a per-day meter reads. CloudFront writes them through an ACL, so this bucket,
    // unlike the data bucket, has ACLs enabled (object writer); it is never public.
    this.logBucket = new s3.Bucket(this, 'LogBucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      lifecycleRules: [{ expiration: Duration.days(LOG_RETENTION_DAYS) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // ── Edge functions: one bundle, two handlers. Lambda@Edge forbids environment variables, so all
    // configuration (bucket, tables, limits, key secret) was fixed when the bundle was built.
    const code = lambda.Code.fromAsset(props.edgeCodeDir);
    this.originFunction = new cloudfront.experimental.EdgeFunction(this, 'OriginRequestFunction', {
      description: 'isoatlas origin-request: serves /api/v1/* from the published release in S3',
      runtime: EDGE_RUNTIME,
      handler: 'index.handler',
      code,
      // Holds the alias maps, structure map and search index of the current release in memory;
      // more memory is also more CPU for the cold start that parses them.
      memorySize: 1024,
      timeout: Duration.seconds(30), // the Lambda@Edge maximum for origin triggers
    });
    // Reads the release through the S3 API with its own role (not OAC). s3:ListBucket makes a missing
    // key answer NoSuchKey (a 404 from the API) instead of AccessDenied (which the edge reports as an
    // unavailable origin); it is limited to the atlas prefix.
    this.originFunction.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [this.bucket.arnForObjects(`${prefix}*`)] }));
    this.originFunction.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: prefix ? { StringLike: { 's3:prefix': [`${prefix}*`] } } : undefined,
      }),
    );

    if (props.access) {
      // Lambda@Edge runs in the regional edge cache nearest the viewer, so the tables are read from
      // many regions. Options: DynamoDB global tables (a replica near each edge, but replication is
      // last-writer-wins, so a conditional increment no longer admits exactly `limit` requests
      // worldwide) or one region. We pick one region, us-east-1: counts stay exact, far edges pay
      // ~100–200 ms per check, and the edge fails open to per-instance counting if it cannot reach it.
      this.quotaTable = new dynamodb.Table(this, 'QuotaTable', {
        tableName: props.access.quotaTableName ?? DEFAULT_QUOTA_TABLE,
        partitionKey: { name: QUOTA_TABLE_KEY, type: dynamodb.AttributeType.STRING },
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        timeToLiveAttribute: QUOTA_TTL_ATTRIBUTE, // counters of ended windows expire on their own
        removalPolicy: RemovalPolicy.DESTROY, // only counters of windows of at most a day
      });
      this.keysTable = new dynamodb.Table(this, 'KeysTable', {
        tableName: props.access.keysTableName ?? DEFAULT_KEYS_TABLE,
        partitionKey: { name: KEYS_TABLE_KEY, type: dynamodb.AttributeType.STRING },
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        removalPolicy: RemovalPolicy.RETAIN, // key hashes and revocations (`isoatlas keys publish`)
      });
      this.viewerFunction = new cloudfront.experimental.EdgeFunction(this, 'ViewerRequestFunction', {
        description: 'isoatlas viewer-request: API keys and quotas on every /api/v1/* request',
        runtime: EDGE_RUNTIME,
        handler: 'index.viewerRequest',
        code,
        memorySize: 128,
        timeout: Duration.seconds(5), // the Lambda@Edge maximum for viewer triggers
      });
      // Exactly what the stores call: UpdateItem (count, undo) on counters, GetItem on keys.
      this.quotaTable.grant(this.viewerFunction, 'dynamodb:UpdateItem');
      this.keysTable.grant(this.viewerFunction, 'dynamodb:GetItem');
    }

    // ── WAF: a coarse per-IP ceiling in front of everything, evaluated before any function runs, so a
    // flood costs neither Lambda invocations nor DynamoDB writes. The default 6,000 per 5 minutes
    // (1,200/min on average) matches the key-required per-IP limit; the finer per-minute/per-day
    // quotas are the viewer function's job.
    const rules: wafv2.CfnWebACL.RuleProperty[] = [
      {
        name: 'RatePerIp',
        priority: 0,
        statement: { rateBasedStatement: { limit: wafLimit, aggregateKeyType: 'IP', evaluationWindowSec: WAF_WINDOW_SECONDS } },
        // The same kind of answer the edge gives over a limit: 429, Retry-After, a problem body.
        action: {
          block: {
            customResponse: {
              responseCode: 429,
              customResponseBodyKey: WAF_TOO_MANY_BODY,
              responseHeaders: [
                { name: 'Retry-After', value: String(WAF_WINDOW_SECONDS) },
                { name: 'Cache-Control', value: 'no-store' },
                { name: 'Access-Control-Allow-Origin', value: '*' },
              ],
            },
          },
        },
        visibilityConfig: { cloudWatchMetricsEnabled: true, metricName: 'isoatlas-rate-per-ip', sampledRequestsEnabled: true },
      },
    ];
    if (props.wafManagedCommonRules) {
      rules.push({
        name: 'AWSManagedRulesCommonRuleSet',
        priority: 1,
        statement: { managedRuleGroupStatement: { vendorName: 'AWS', name: 'AWSManagedRulesCommonRuleSet' } },
        overrideAction: { none: {} },
        visibilityConfig: { cloudWatchMetricsEnabled: true, metricName: 'isoatlas-common-rules', sampledRequestsEnabled: true },
      });
    }
    this.webAcl = new wafv2.CfnWebACL(this, 'WebAcl', {
      scope: 'CLOUDFRONT',
      defaultAction: { allow: {} },
      rules,
      // WAF sends its own bodies with Content-Type application/json (it offers no problem+json).
      customResponseBodies: { [WAF_TOO_MANY_BODY]: { contentType: 'APPLICATION_JSON', content: wafTooManyBody(wafLimit) } },
      visibilityConfig: { cloudWatchMetricsEnabled: true, metricName: 'isoatlas-web-acl', sampledRequestsEnabled: true },
    });

    // ── Distribution.
    // OAC: CloudFront signs its requests to S3; the bucket policy admits only this distribution.
    // originPath maps the atlas prefix away, so URLs are /current.json and /releases/… whatever the
    // prefix (the edge's structure redirects point at /releases/<release>/structures/<id>.cif).
    const origin = origins.S3BucketOrigin.withOriginAccessControl(this.bucket, {
      originPath: prefix ? `/${prefix.slice(0, -1)}` : undefined,
    });

    // CORS (and two cheap security headers) on every response. Same values as the edge function sets,
    // so a response looks the same whether CloudFront or the function produced it.
    const responseHeaders = new cloudfront.ResponseHeadersPolicy(this, 'CorsHeaders', {
      comment: 'isoatlas: CORS for any origin, read-only',
      corsBehavior: {
        accessControlAllowOrigins: ['*'],
        accessControlAllowMethods: ['GET', 'HEAD', 'OPTIONS'],
        accessControlAllowHeaders: ['Authorization', 'If-None-Match', 'Content-Type'],
        accessControlExposeHeaders: [...EXPOSED_HEADERS],
        accessControlAllowCredentials: false,
        accessControlMaxAge: Duration.days(1),
        originOverride: true,
      },
      securityHeadersBehavior: {
        contentTypeOptions: { override: true },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: false, override: true },
      },
    });

    // The API cache key: path + limit/offset/query, nothing else. Authorization is deliberately NOT in
    // it: bodies are the same for every caller, so keyed and anonymous users share cached answers, and
    // access is decided by the viewer-request function on every request, cache hits included (it
    // also strips Authorization before the request goes further). Other query parameters are dropped
    // from the key and from what the function sees, so junk parameters cannot bust the cache.
    const apiCachePolicy = new cloudfront.CachePolicy(this, 'ApiCachePolicy', {
      comment: 'isoatlas /api/v1/*: path + limit, offset, query; no headers or cookies',
      queryStringBehavior: cloudfront.CacheQueryStringBehavior.allowList(...QUERY_PARAMETERS),
      headerBehavior: cloudfront.CacheHeaderBehavior.none(),
      cookieBehavior: cloudfront.CacheCookieBehavior.none(),
      // The function sends Cache-Control (1 h for release data, 60 s for search); these bound it.
      defaultTtl: Duration.hours(1),
      maxTtl: Duration.days(1),
      minTtl: Duration.seconds(0),
      enableAcceptEncodingGzip: true,
      enableAcceptEncodingBrotli: true,
    });
    // At origin-request CloudFront sets Host to the origin's domain (here the S3 bucket). The function
    // builds structure redirects from the request's own host when the bundle has no structureBaseUrl,
    // so the viewer's Host is passed through: redirects then point at this distribution, not at the
    // private bucket. Safe because the function answers every /api/v1/* request itself; nothing on
    // this behaviour is forwarded to S3 (where a foreign Host would break OAC signing).
    const apiOriginRequest = new cloudfront.OriginRequestPolicy(this, 'ApiOriginRequestPolicy', {
      comment: 'isoatlas /api/v1/*: the viewer Host, for redirects built by the origin-request function',
      headerBehavior: cloudfront.OriginRequestHeaderBehavior.allowList('Host'),
      queryStringBehavior: cloudfront.OriginRequestQueryStringBehavior.none(), // the cache key's are sent anyway
      cookieBehavior: cloudfront.OriginRequestCookieBehavior.none(),
    });
    // Release files never change under their versioned prefix (publish writes them `immutable`).
    const releaseCachePolicy = new cloudfront.CachePolicy(this, 'ReleaseFilesCachePolicy', {
      comment: 'isoatlas /releases/*: immutable, versioned files',
      queryStringBehavior: cloudfront.CacheQueryStringBehavior.none(),
      headerBehavior: cloudfront.CacheHeaderBehavior.none(),
      cookieBehavior: cloudfront.CacheCookieBehavior.none(),
      defaultTtl: Duration.days(365),
      maxTtl: Duration.days(365),
      minTtl: Duration.days(1),
      enableAcceptEncodingGzip: true,
      enableAcceptEncodingBrotli: true,
    });
    // current.json (the release pointer) changes on every publish; 10 s keeps a switch visible fast
    // without sending every request to S3. Publish also invalidates it.
    const pointerCachePolicy = new cloudfront.CachePolicy(this, 'PointerCachePolicy', {
      comment: 'isoatlas default: current.json and other small mutable objects, short TTL',
      queryStringBehavior: cloudfront.CacheQueryStringBehavior.none(),
      headerBehavior: cloudfront.CacheHeaderBehavior.none(),
      cookieBehavior: cloudfront.CacheCookieBehavior.none(),
      defaultTtl: Duration.seconds(10),
      maxTtl: Duration.seconds(60),
      minTtl: Duration.seconds(0),
      enableAcceptEncodingGzip: true,
      enableAcceptEncodingBrotli: true,
    });

    const edgeLambdas: cloudfront.EdgeLambda[] = [
      { functionVersion: this.originFunction.currentVersion, eventType: cloudfront.LambdaEdgeEventType.ORIGIN_REQUEST },
    ];
    if (this.viewerFunction) {
      edgeLambdas.push({ functionVersion: this.viewerFunction.currentVersion, eventType: cloudfront.LambdaEdgeEventType.VIEWER_REQUEST });
    }

    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: `isoatlas ${props.bucketName}/${prefix}`,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      priceClass: props.priceClass ?? cloudfront.PriceClass.PRICE_CLASS_ALL,
      webAclId: this.webAcl.attrArn, // WAFv2 takes the web ACL's ARN here
      ...customDomain(this, props.customDomain),
      enableLogging: true,
      logBucket: this.logBucket,
      logFilePrefix: 'cloudfront/',
      logIncludesCookies: false,
      defaultBehavior: {
        origin,
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: pointerCachePolicy,
        responseHeadersPolicy: responseHeaders,
        compress: true,
      },
      additionalBehaviors: {
        [`${API_PREFIX.slice(1)}/*`]: {
          origin,
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
          // OPTIONS reaches the functions: preflights are answered by the edge, never counted.
          allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD_OPTIONS,
          cachedMethods: cloudfront.CachedMethods.CACHE_GET_HEAD,
          cachePolicy: apiCachePolicy,
          originRequestPolicy: apiOriginRequest,
          responseHeadersPolicy: responseHeaders,
          compress: true,
          edgeLambdas,
        },
        'releases/*': {
          origin,
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
          allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
          cachePolicy: releaseCachePolicy,
          responseHeadersPolicy: responseHeaders, // structure files are fetched cross-origin by viewers
          compress: true,
        },
      },
    });

    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
    new CfnOutput(this, 'LogBucketName', { value: this.logBucket.bucketName, description: 'CloudFront standard logs, under cloudfront/' });
    new CfnOutput(this, 'DistributionId', { value: this.distribution.distributionId });
    new CfnOutput(this, 'DistributionDomainName', { value: this.distribution.distributionDomainName });
    new CfnOutput(this, 'WebAclArn', { value: this.webAcl.attrArn });
    if (this.quotaTable && this.keysTable) {
      new CfnOutput(this, 'QuotaTableName', { value: this.quotaTable.tableName });
      new CfnOutput(this, 'KeysTableName', { value: this.keysTable.tableName, description: 'isoatlas keys publish --table <this>' });
    }
  }
}

function checkPrefix(prefix: string): string {
  if (prefix !== '' && (!prefix.endsWith('/') || prefix.startsWith('/') || prefix.includes('//') || !/^[A-Za-z0-9!_.*'()\/-]+$/.test(prefix))) {
    throw new Error(`prefix "${prefix}" must be empty or a key prefix like "atlas/" (ending in "/", not starting with it)`);
  }
  return prefix;
}

function checkWafLimit(limit: number): number {
  // WAF accepts 10 … 2,000,000,000 requests per evaluation window.
  if (!Number.isInteger(limit) || limit < 10 || limit > 2_000_000_000) throw new Error(`wafRequestsPer5MinPerIp must be an integer from 10 to 2e9, not ${limit}`);
  return limit;
}

function checkBucketName(name: string): void {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) || name.includes('..') || /^\d+\.\d+\.\d+\.\d+$/.test(name)) {
    throw new Error(`"${name}" is not a valid S3 bucket name`);
  }
}

/** Refuses a bundle built for other settings: a bundle without access behind a viewer trigger would
 * fail every API request, one for another bucket would serve nothing. The settings are inlined into
 * the bundle as JSON string literals, so the names must appear in it. */
function checkEdgeBundle(dir: string, config: EdgeBundleConfig): void {
  const file = join(dir, 'index.js');
  if (!existsSync(file)) throw new Error(`${file} does not exist: build the edge bundle first (build/bundle-edge.ts)`);
  const text = readFileSync(file, 'utf8');
  const expected = [config.s3!.bucket, ...(config.access ? [config.access.quotaTable, config.access.keysTable] : [])];
  const missing = expected.filter((name) => !text.includes(JSON.stringify(name)));
  if (missing.length) throw new Error(`the edge bundle in ${dir} was not built for this stack (no mention of ${missing.join(', ')})`);
}

/** The problem body of the WAF's 429 (RFC 9457, as the edge's own; WAF bodies are static, so it names
 * no request instance). */
export function wafTooManyBody(limit: number): string {
  return JSON.stringify({
    type: 'about:blank',
    title: 'Too Many Requests',
    status: 429,
    detail: `rate limit exceeded: more than ${limit} requests in ${WAF_WINDOW_SECONDS / 60} minutes from one IP address at the CDN; retry after ${WAF_WINDOW_SECONDS} s`,
  });
}

/** Distribution settings of a custom domain (none without one). */
function customDomain(scope: Construct, domain: IsoatlasCdnProps['customDomain']): Partial<cloudfront.DistributionProps> {
  if (!domain) return {};
  if (domain.names.length === 0 || domain.names.some((n) => !/^(\*\.)?([a-z0-9-]+\.)+[a-z]{2,}$/i.test(n))) {
    throw new Error(`customDomain.names must be domain names (e.g. atlas.example.org); got ${JSON.stringify(domain.names)}`);
  }
  if (!/^arn:aws:acm:us-east-1:\d{12}:certificate\/[\w-]+$/.test(domain.certificateArn)) {
    throw new Error(`customDomain.certificateArn must be an ACM certificate in us-east-1 (CloudFront uses certificates from there only); got "${domain.certificateArn}"`);
  }
  return {
    domainNames: domain.names,
    certificate: acm.Certificate.fromCertificateArn(scope, 'Certificate', domain.certificateArn),
    minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
    sslSupportMethod: cloudfront.SSLMethod.SNI,
  };
}
