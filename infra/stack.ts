// The CDN deployment as code: a private bucket holding published releases, a CloudFront distribution
// in front of it (the bucket is reached only through Origin Access Control), the edge bundle as a
// Lambda@Edge origin-request function (serves /api/v1/* on cache misses), and a WAF web ACL.
// With access control, a CloudFront Function (the key gate) checks API keys on the viewer request of
// every behaviour against a CloudFront KeyValueStore, in process; WAF rate rules hold the per-minute
// limits; and a day meter (a Lambda function fed by the gate's log lines) marks keys whose day quota
// is used up. Nothing on the request path calls a network service for access control.
//
// Everything here synthesizes offline: no lookups, no context queries, an explicit account and region.
// The region is always us-east-1: Lambda@Edge functions and CLOUDFRONT-scoped web ACLs must be created
// there, and keeping the whole stack in that one region avoids cross-region references (which would
// need SSM lookups at deploy time).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, ArnFormat, CfnOutput, Duration, RemovalPolicy, Stack, Token, type StackProps } from 'aws-cdk-lib';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventTargets from 'aws-cdk-lib/aws-events-targets';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as logDestinations from 'aws-cdk-lib/aws-logs-destinations';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as lambdaDestinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { VALIDATE_AGAINST_DEFAULT_RULES } from 'aws-cdk-lib/cx-api';
import { AtlasAlarms } from './alarms.js';
import { atlasBucket } from './bucket.js';
import { ownProviderLogs } from './log-groups.js';
import type { Construct } from 'constructs';
import { resolveAccessConfig, tierLimits, type AccessConfig, type AccessMode } from '../edge/access/config.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { RANDOM_ID_LENGTH } from '../edge/access/key-format.js';
import { METER_MARK } from '../edge/cloudfront/kvs-layout.js';
import { KVS_SIZE_LIMIT_BYTES, KVS_WARN_FRACTION } from '../edge/cloudfront/kvs-capacity.js';
import { KEY_STORE_METRICS } from '../edge/cloudfront/key-store-metrics.js';
import { METER_ENV, METER_TABLE_KEY, METER_TABLE_SORT_KEY, METER_TTL_ATTRIBUTE } from '../edge/cloudfront/meter.js';
import { MARK_WRITER_ENV } from '../edge/cloudfront/mark-writer.js';
import { METER_FUNCTIONS } from '../build/bundle/edge.js';
import { API_PREFIX } from '../edge/contract/tree.js';
import { PACKS_PREFIX } from '../edge/contract/packs.js';
import type { EdgeBundleConfig } from '../edge/lambda-entry.js';
// The cache key's query names and the CORS values come from the contract, never restated here.
import {
  ALLOWED_METHODS,
  ALLOWED_REQUEST_HEADERS,
  CDN_VIEWER_CACHE_CONTROL,
  CORS_HEADERS,
  EXPOSED_HEADERS,
  PREFLIGHT_MAX_AGE_SECONDS,
  QUERY_PARAMETERS,
} from '../edge/contract/http-headers.js';
import { HEADER_LIMITS, HEADER_LIMITS_DETAIL } from '../edge/contract/header-limits.js';

type MeterFunction = keyof typeof METER_FUNCTIONS;

/** Lambda@Edge and CloudFront-scoped WAF live in us-east-1; so does everything else in this stack. */
export const EDGE_REGION = 'us-east-1';
export const DEFAULT_ACCOUNT = '111111111111';
export const DEFAULT_WAF_REQUESTS_PER_5MIN_PER_IP = 6000;
/** The App context every synth of these stacks uses (infra/app.ts and the tests): CDK checks each
 * template against CloudFormation's resource schemas and rules, and any finding fails the synth
 * instead of being a warning that deploys fail on later. */
export const SYNTH_CONTEXT = { [VALIDATE_AGAINST_DEFAULT_RULES]: true } as const;
/** The newest Node.js runtime Lambda@Edge supports (AWS's Lambda@Edge restrictions page). */
const EDGE_RUNTIME = lambda.Runtime.NODEJS_22_X;
/** The day meter is a regional function, not Lambda@Edge: the newest Node.js runtime of Lambda. */
const METER_RUNTIME = lambda.Runtime.NODEJS_24_X;
/** The window of the WAF's per-IP rate rule without access control, which is also what its 429 says
 * to wait. With access control, limits are per minute (ACCESS_WINDOW_SECONDS). */
export const WAF_WINDOW_SECONDS = 300;
export const ACCESS_WINDOW_SECONDS = 60;
/** How long CloudFront's standard logs are kept. */
export const LOG_RETENTION_DAYS = 90;
/** The web ACL's metric name, the WebACL dimension of its CloudWatch metrics. */
const WEB_ACL_METRIC = 'isoatlas-web-acl';

export interface IsoatlasAccessProps {
  mode: AccessMode;
  /** A partial AccessConfig (as in `--access-config limits.json`), overlaid on DEFAULT_ACCESS. */
  config?: unknown;
  /** A directory written by build/bundle/edge.ts bundleMeter (the day meter's code). Needed when a
   * tier of the arrangement has a day limit. */
  meterCodeDir?: string;
  /** WAF logs to CloudWatch Logs (aws-waf-logs-<stack>), with the Authorization header redacted. */
  wafLogs?: boolean;
}

export interface IsoatlasCdnProps extends StackProps {
  bucketName: string;
  /** The bucket's region (default us-east-1). Another region: the bucket is IsoatlasBucketStack's
   * (infra/bucket.ts), deployed after this stack; the edge pieces stay in us-east-1. */
  bucketRegion?: string;
  /** Key prefix of the atlas in the bucket: '' or ending in '/'. */
  prefix?: string;
  /** Unset: no key gate, no meter (anything reaching the distribution is served, within the WAF's
   * per-IP ceiling). */
  access?: IsoatlasAccessProps;
  /** Without access control: requests per client IP per 5 minutes before WAF answers 429. */
  wafRequestsPer5MinPerIp?: number;
  /** Also run the AWS managed common rule set (OWASP-style checks). Off by default: it blocks requests
   * without a User-Agent and large query strings, which some scripted API clients send. */
  wafManagedCommonRules?: boolean;
  /** A directory written by build/bundle/edge.ts (`index.js` exporting the origin-request handler). */
  edgeCodeDir: string;
  priceClass?: cloudfront.PriceClass;
  /** A custom domain: its names and an ACM certificate for them, which CloudFront requires to be in
   * us-east-1. Both or neither; viewers then need TLS 1.2 or newer (the TLSv1.2_2021 policy). */
  customDomain?: { names: string[]; certificateArn: string };
  /** A KeyValueStore to use instead of creating one: the store a deleted or replaced stack left
   * behind (it is retained, with the server secret, every key and the release pin), by its ARN (that
   * stack's KeyValueStoreArn output). */
  keyValueStoreArn?: string;
  /** An email address the alarms' topic notifies (it must confirm the subscription AWS mails it). */
  alarmEmail?: string;
}

/** What the edge bundle for these stack settings must be built with (build/bundle/edge.ts). Building
 * the bundle from the same settings as the stack is how the two agree on bucket and prefix. */
export function edgeBundleConfig(
  props: Pick<IsoatlasCdnProps, 'bucketName' | 'bucketRegion' | 'prefix'> & { structureBaseUrl?: string },
): EdgeBundleConfig {
  return {
    s3: { bucket: props.bucketName, region: props.bucketRegion ?? EDGE_REGION, prefix: props.prefix ?? '' },
    structureBaseUrl: props.structureBaseUrl,
  };
}

export class IsoatlasCdnStack extends Stack {
  /** The atlas bucket: created here in us-east-1, named here when IsoatlasBucketStack holds it. */
  readonly bucket: s3.IBucket;
  /** CloudFront's standard logs. */
  readonly logBucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  readonly webAcl: wafv2.CfnWebACL;
  readonly originFunction: cloudfront.experimental.EdgeFunction;
  /** The origin function's log group here; Lambda@Edge writes under the same name in other regions. */
  readonly originLogs: logs.LogGroup;
  /** The viewer gate (release pinning, and keys with access control) and the store it reads. */
  readonly keyGate: cloudfront.Function;
  readonly keyValueStore: cloudfront.IKeyValueStore;
  /** The day meter, its counters and its input (when a tier has a day limit). */
  readonly meterFunction?: lambda.Function;
  readonly meterTable?: dynamodb.Table;
  /** The alarms and the topic they notify. */
  readonly alarms: AtlasAlarms;

  constructor(scope: Construct, id: string, props: IsoatlasCdnProps) {
    super(scope, id, {
      description: 'isoatlas: read-only JSON API (v1) from S3 through CloudFront and Lambda@Edge',
      ...props,
      env: { account: props.env?.account ?? DEFAULT_ACCOUNT, region: props.env?.region ?? EDGE_REGION },
      // A bucket in another region reads the distribution's ARN from this stack.
      crossRegionReferences: (props.bucketRegion ?? EDGE_REGION) !== EDGE_REGION,
    });
    if (Token.isUnresolved(this.region) || this.region !== EDGE_REGION) {
      throw new Error(
        `IsoatlasCdnStack must be deployed to ${EDGE_REGION} (Lambda@Edge and CloudFront WAF), not ${this.region}`,
      );
    }
    const prefix = checkPrefix(props.prefix ?? '');
    const wafLimit = checkWafLimit(props.wafRequestsPer5MinPerIp ?? DEFAULT_WAF_REQUESTS_PER_5MIN_PER_IP);
    checkBucketName(props.bucketName);
    const bucketRegion = checkRegion(props.bucketRegion ?? EDGE_REGION);
    const accessConfig = props.access && resolveAccessConfig(props.access.config, props.access.mode);
    checkEdgeBundle(props.edgeCodeDir, edgeBundleConfig(props));
    ownProviderLogs(this);

    // ── Bucket: private, reachable only by this distribution (OAC) and the origin function's role.
    // In another region it is IsoatlasBucketStack's (infra/bucket.ts), and only named here.
    this.bucket =
      bucketRegion === EDGE_REGION
        ? atlasBucket(this, props.bucketName)
        : s3.Bucket.fromBucketAttributes(this, 'AtlasBucket', { bucketName: props.bucketName, region: bucketRegion });

    // ── Standard logs of the distribution (legacy S3 delivery): the record of who asked for what.
    // CloudFront writes them through an ACL, so this bucket,
    // unlike the data bucket, has ACLs enabled (object writer); it is never public.
    this.logBucket = new s3.Bucket(this, 'LogBucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      lifecycleRules: [{ expiration: Duration.days(LOG_RETENTION_DAYS) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // ── The origin-request function. Lambda@Edge forbids environment variables, so its configuration
    // (bucket, prefix) was fixed when the bundle was built.
    const code = lambda.Code.fromAsset(props.edgeCodeDir);
    // A log group of its own, named so it reads the same everywhere: Lambda@Edge writes a function's
    // lines under its custom group's name in each region where it runs (CloudFront's "Edge function
    // logs"). The stack owns this one, in us-east-1; the others Lambda@Edge creates (OPERATIONS).
    this.originLogs = new logs.LogGroup(this, 'OriginRequestLogs', {
      logGroupName: `/isoatlas/${this.stackName}/origin-request`,
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.originFunction = new cloudfront.experimental.EdgeFunction(this, 'OriginRequestFunction', {
      logGroup: this.originLogs,
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
    this.originFunction.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [this.bucket.arnForObjects(`${prefix}*`)] }),
    );
    this.originFunction.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: prefix ? { StringLike: { 's3:prefix': [`${prefix}*`] } } : undefined,
      }),
    );

    if (accessConfig && !props.customDomain)
      Annotations.of(this).addWarningV2(KEYS_OVER_OLD_TLS, KEYS_OVER_OLD_TLS_TEXT);
    const access = this.addGate(props.access, accessConfig ?? null, props.keyValueStoreArn);
    this.keyGate = access.keyGate;
    this.keyValueStore = access.keyValueStore;
    this.meterFunction = access?.meterFunction;
    this.meterTable = access?.meterTable;
    const meterFailures = access.meterFailures;

    // ── WAF: rate rules, evaluated before any function runs, so a flood costs no function invocations.
    // Without access control, a coarse per-IP ceiling over 5 minutes. With it, the per-minute limits
    // of the arrangement (WAF counts approximately, over a sliding window): per key, aggregated on the
    // Authorization header lowercased (WAF runs before the gate, so no header the gate sets could be
    // used; the gate admits one spelling per key up to letter case, so each key is one count), and
    // per IP (anonymous and keyed requests apart in A; every request, coarsely, in B). WAF cannot
    // aggregate IPv6 addresses by /64, so the distribution serves IPv4 only (below). A key's tier is
    // the letter its id starts with (WAF cannot read the KeyValueStore), matched by one fixed regex
    // per tier, so a tier holds any number of keys.
    // First of all, in every arrangement, requests whose headers WAF cannot see whole are blocked
    // (oversizeHeadersRule): a rate rule after it sees every header of what it counts.
    const rules = [
      oversizeHeadersRule(),
      ...(accessConfig
        ? accessRules(accessConfig)
        : [perIpRule(wafLimit, WAF_WINDOW_SECONDS, 'isoatlas-rate-per-ip', 'from one IP address at the CDN')]),
    ];
    const bodies = Object.fromEntries(
      rules.map((r) => [r.bodyKey, { contentType: 'APPLICATION_JSON', content: r.body }]),
    );
    const wafRules: wafv2.CfnWebACL.RuleProperty[] = rules.map((r, priority) => ({
      ...r.rule,
      priority,
      visibilityConfig: visibility(r.rule.name, !accessConfig),
    }));
    if (props.wafManagedCommonRules) {
      wafRules.push({
        name: 'AWSManagedRulesCommonRuleSet',
        priority: wafRules.length,
        statement: { managedRuleGroupStatement: { vendorName: 'AWS', name: 'AWSManagedRulesCommonRuleSet' } },
        overrideAction: { none: {} },
        visibilityConfig: visibility('isoatlas-common-rules', !accessConfig),
      });
    }
    this.webAcl = new wafv2.CfnWebACL(this, 'WebAcl', {
      scope: 'CLOUDFRONT',
      defaultAction: { allow: {} },
      rules: wafRules,
      // WAF sends its own bodies with Content-Type application/json (it offers no problem+json).
      customResponseBodies: bodies,
      // Sampled requests show request headers, Authorization included: off when keys are sent.
      visibilityConfig: visibility(WEB_ACL_METRIC, !accessConfig),
      // Where keys are sent, WAF itself replaces the Authorization header in every record it keeps
      // (logs, sampled requests), rate-rule details included: the per-key rules aggregate on that
      // header, and WAF writes an aggregation key's value into a log's rateBasedRuleList, which the
      // logging configuration's RedactedFields does not reach (AWS WAF API: DataProtectionConfig).
      dataProtectionConfig: accessConfig ? { dataProtections: [AUTHORIZATION_PROTECTION] } : undefined,
    });
    if (props.access?.wafLogs) this.addWafLogs();

    // ── Distribution.
    // OAC: CloudFront signs its requests to S3; the bucket policy admits only this distribution.
    // originPath maps the atlas prefix away, so URLs are /current.json and /releases/… whatever the
    // prefix (the edge's structure redirects point at /releases/<release>/structures/<id>.cif).
    const origin = origins.S3BucketOrigin.withOriginAccessControl(this.bucket, {
      originPath: prefix ? `/${prefix.slice(0, -1)}` : undefined,
    });
    // A bucket in another region gets its policy from IsoatlasBucketStack, which admits this distribution.
    if (bucketRegion !== EDGE_REGION)
      Annotations.of(this).acknowledgeWarning(
        '@aws-cdk/aws-cloudfront-origins:updateImportedBucketPolicyOac',
        'IsoatlasBucketStack writes the policy',
      );

    // CORS (and two cheap security headers) on every response, with the contract's values: the same
    // the edge function and the gate's preflight answer send, so an answer looks the same whoever gave it.
    const cors: cloudfront.ResponseHeadersCorsBehavior = {
      accessControlAllowOrigins: [CORS_HEADERS['Access-Control-Allow-Origin']],
      accessControlAllowMethods: [...ALLOWED_METHODS],
      accessControlAllowHeaders: [...ALLOWED_REQUEST_HEADERS],
      accessControlExposeHeaders: [...EXPOSED_HEADERS],
      accessControlAllowCredentials: false,
      accessControlMaxAge: Duration.seconds(PREFLIGHT_MAX_AGE_SECONDS),
      originOverride: true,
    };
    const securityHeadersBehavior: cloudfront.ResponseSecurityHeadersBehavior = {
      contentTypeOptions: { override: true },
      strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: false, override: true },
    };
    const responseHeaders = new cloudfront.ResponseHeadersPolicy(this, 'CorsHeaders', {
      comment: 'isoatlas: CORS for any origin, read-only',
      corsBehavior: cors,
      securityHeadersBehavior,
    });
    // The same, and viewers told to keep answers private and revalidate them: for the API in every
    // arrangement (the gate pins the release in CloudFront's cache key, which a proxy downstream never
    // sees) and for everything in B (every answer was asked with a key). A policy's Cache-Control goes
    // to viewers only; CloudFront still caches by the origin's (AWS: modifying-response-headers).
    const privateHeaders = new cloudfront.ResponseHeadersPolicy(this, 'PrivateHeaders', {
      comment: 'isoatlas: CORS for any origin, read-only; private to the viewer',
      corsBehavior: cors,
      securityHeadersBehavior,
      customHeadersBehavior: {
        customHeaders: [{ header: 'Cache-Control', value: CDN_VIEWER_CACHE_CONTROL, override: true }],
      },
    });
    const dataHeaders = accessConfig?.mode === 'key-required' ? privateHeaders : responseHeaders;

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
    // No origin request policy: the function reads only the path and the cache key's query, which
    // CloudFront sends anyway. Structure redirects are root-relative or the configured base, never
    // built from a Host, so the viewer's Host is not forwarded.
    // Release files never change under their versioned path, objects never under their sha256.
    const immutableFiles = {
      queryStringBehavior: cloudfront.CacheQueryStringBehavior.none(),
      headerBehavior: cloudfront.CacheHeaderBehavior.none(),
      cookieBehavior: cloudfront.CacheCookieBehavior.none(),
      defaultTtl: Duration.days(365),
      maxTtl: Duration.days(365),
      minTtl: Duration.days(1),
    };
    const releaseCachePolicy = new cloudfront.CachePolicy(this, 'ReleaseFilesCachePolicy', {
      comment: 'isoatlas /releases/* and /objects/*: immutable, versioned or content-addressed files',
      ...immutableFiles,
      enableAcceptEncodingGzip: true,
      enableAcceptEncodingBrotli: true,
    });
    // Packs (edge/contract/packs.ts) are read whole or by byte range by mirrors. S3 answers Range
    // GETs, and CloudFront passes a range it lacks on to the origin (perhaps widened) and caches the
    // part it gets (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/RangeGETs.html).
    // A range counts bytes of the representation answered (RFC 9110 §14.1.2), so a mirror's offsets
    // from a pack index hold only for the identity bytes: the behaviour never compresses (compress:
    // false below), and Accept-Encoding stays out of the cache key, which would only split it.
    const packsCachePolicy = new cloudfront.CachePolicy(this, 'PacksCachePolicy', {
      comment: 'isoatlas /packs/*: immutable, content-addressed, never compressed (read by byte range)',
      ...immutableFiles,
      enableAcceptEncodingGzip: false,
      enableAcceptEncodingBrotli: false,
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
    // The key gate on every behaviour: each can return atlas data (the pointer, release files,
    // structures, the API), so none may reach the bucket without it.
    const functionAssociations = [{ function: this.keyGate, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST }];
    // Every behaviour admits OPTIONS, which CloudFront otherwise refuses with 403 before any function
    // runs, so a browser's preflight (sent with Authorization) reaches the gate, which answers it.
    // Only GET and HEAD are cached; OPTIONS never reaches an origin.
    const methods = {
      allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD_OPTIONS,
      cachedMethods: cloudfront.CachedMethods.CACHE_GET_HEAD,
    };

    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: `isoatlas ${props.bucketName}/${prefix}`,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      // Per-IP limits count whole addresses, and WAF cannot group IPv6 addresses by /64 (one client
      // may hold 2^64 of them), so viewers reach the distribution over IPv4.
      enableIpv6: false,
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
        ...methods,
        cachePolicy: pointerCachePolicy,
        responseHeadersPolicy: dataHeaders,
        compress: true,
        functionAssociations,
      },
      additionalBehaviors: {
        [`${API_PREFIX.slice(1)}/*`]: {
          origin,
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
          ...methods,
          cachePolicy: apiCachePolicy,
          responseHeadersPolicy: privateHeaders,
          compress: true,
          edgeLambdas,
          functionAssociations,
        },
        // A release's structure files (where the API's redirects point): the origin-request function
        // finds the object the release's manifest names and sends the request on to it, so
        // CloudFront fetches the file from the bucket whatever its size.
        'releases/*': {
          origin,
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
          ...methods,
          cachePolicy: releaseCachePolicy,
          responseHeadersPolicy: dataHeaders, // structure files are fetched cross-origin by viewers
          compress: true,
          edgeLambdas,
          functionAssociations,
        },
        // The store's objects, named by their sha256 (what mirrors read): never change.
        'objects/*': {
          origin,
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
          ...methods,
          cachePolicy: releaseCachePolicy,
          responseHeadersPolicy: dataHeaders,
          compress: true,
          functionAssociations,
        },
        // The store's packs (what mirrors read in a few large reads): behind the same gate as objects.
        [`${PACKS_PREFIX}*`]: {
          origin,
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
          ...methods,
          cachePolicy: packsCachePolicy,
          responseHeadersPolicy: dataHeaders,
          compress: false,
          functionAssociations,
        },
      },
    });

    this.alarms = new AtlasAlarms(this, 'Alarms', {
      distribution: this.distribution,
      webAcl: this.webAcl,
      webAclMetricName: WEB_ACL_METRIC,
      meterFunction: this.meterFunction,
      meterFailures,
      keyStoreSize: access.markWriter && {
        metric: new cloudwatch.Metric({
          namespace: KEY_STORE_METRICS.namespace,
          metricName: KEY_STORE_METRICS.bytes,
          dimensionsMap: { [KEY_STORE_METRICS.dimension]: this.keyValueStore.keyValueStoreArn },
          statistic: 'Maximum',
          period: Duration.days(1),
        }),
        // The share at which `keys publish` warns too (it counts room for day marks as well).
        warnAtBytes: Math.floor(KVS_SIZE_LIMIT_BYTES * KVS_WARN_FRACTION),
      },
      email: props.alarmEmail,
    });

    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
    new CfnOutput(this, 'LogBucketName', {
      value: this.logBucket.bucketName,
      description: 'CloudFront standard logs, under cloudfront/',
    });
    new CfnOutput(this, 'DistributionId', { value: this.distribution.distributionId });
    new CfnOutput(this, 'DistributionDomainName', { value: this.distribution.distributionDomainName });
    new CfnOutput(this, 'WebAclArn', { value: this.webAcl.attrArn });
    new CfnOutput(this, 'OriginLogGroupName', {
      value: this.originLogs.logGroupName,
      description:
        'the origin function logs under this name in every region it runs in; set its retention there (OPERATIONS)',
    });
    new CfnOutput(this, 'KeyValueStoreArn', {
      value: this.keyValueStore.keyValueStoreArn,
      description: 'isoatlas publish --kvs <this> (and keys publish --kvs)',
    });
    if (this.meterTable)
      new CfnOutput(this, 'MeterTableName', {
        value: this.meterTable.tableName,
        description: 'requests per API key and UTC day',
      });
  }

  /** The store of the release pin, the server secret and the keys: kept when the stack is deleted or
   * the store replaced (CloudFormation DeletionPolicy and UpdateReplacePolicy Retain), so that losing
   * the stack never loses them; a later stack adopts it by its ARN (keyValueStoreArn). */
  private keyStore(adopted: string | undefined): cloudfront.IKeyValueStore {
    if (adopted) return cloudfront.KeyValueStore.fromKeyValueStoreArn(this, 'KeyStore', adopted);
    const store = new cloudfront.KeyValueStore(this, 'KeyStore', {
      comment:
        'isoatlas: the current release (isoatlas publish --kvs); API keys, revocations, day-quota marks (isoatlas keys publish)',
    });
    store.applyRemovalPolicy(RemovalPolicy.RETAIN);
    return store;
  }

  /** The viewer gate and its store (always: it pins the release), and with a day limit the meter. */
  private addGate(access: IsoatlasAccessProps | undefined, config: AccessConfig | null, adoptedStore?: string) {
    const settings = keyGateSettings(config);
    const keyValueStore = this.keyStore(adoptedStore);
    // Named, so the log group it writes to (/aws/cloudfront/function/<name>, in us-east-1) is known.
    const gateName = `${this.stackName}-key-gate`.slice(0, 64);
    const keyGate = new cloudfront.Function(this, 'KeyGate', {
      functionName: gateName,
      comment: `isoatlas viewer gate (${settings.mode}): current release${config ? ' and API keys' : ''} from the KeyValueStore`,
      runtime: cloudfront.FunctionRuntime.JS_2_0,
      code: cloudfront.FunctionCode.fromInline(keyGateCode(settings)),
      keyValueStore,
    });
    // CloudFront Functions write their lines to this group in us-east-1 (the meter's input, when a
    // tier has a day limit, and whatever else CloudFront logs there); created here to own its retention.
    const gateLogs = new logs.LogGroup(this, 'KeyGateLogs', {
      logGroupName: `/aws/cloudfront/function/${gateName}`,
      retention: logs.RetentionDays.ONE_WEEK,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // bundleMeter's outDir holds one directory per function (METER_FUNCTIONS), each its own package.
    const code = (fn: MeterFunction) => join(access?.meterCodeDir ?? '', METER_FUNCTIONS[fn].dir);
    const isBuilt = (fn: MeterFunction) => access?.meterCodeDir !== undefined && existsSync(join(code(fn), 'index.js'));
    // With keys, the mark writer also reports the store's size every day (its alarm), so it is
    // deployed whenever its code is given (npm run synth always builds it), day limits or not.
    const markWriter =
      access && isBuilt('markWriter') ? this.addMarkWriter(code('markWriter'), keyValueStore) : undefined;
    if (!access || settings.metered.length === 0) return { keyGate, keyValueStore, markWriter };
    const built = (Object.keys(METER_FUNCTIONS) as MeterFunction[]).every(isBuilt);
    if (!access.meterCodeDir || !built) {
      throw new Error(
        `tiers ${settings.metered.join(', ')} have a day limit, so the day meter's code is needed: build it with bundleMeter (build/bundle/edge.ts) and pass its outDir as access.meterCodeDir`,
      );
    }
    // Per key and day: one item per log delivery (replays rewrite it) and a running estimate.
    const meterTable = new dynamodb.Table(this, 'MeterTable', {
      partitionKey: { name: METER_TABLE_KEY, type: dynamodb.AttributeType.STRING },
      sortKey: { name: METER_TABLE_SORT_KEY, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: METER_TTL_ATTRIBUTE, // counters of ended days expire on their own
      // Today's counts: a stack deleted or replaced mid-day must not hand every key a fresh day quota.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const meterFailures = new sqs.Queue(this, 'DayMeterFailures', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    new CfnOutput(this, 'MeterFailureQueueUrl', {
      value: meterFailures.queueUrl,
      description: 'log deliveries the day meter could not count (kept 14 days; see OPERATIONS)',
    });
    // Its own log group, to own its retention (Lambda's default group keeps lines forever).
    const meterLogs = new logs.LogGroup(this, 'DayMeterLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const meterFunction = new lambda.Function(this, 'DayMeter', {
      logGroup: meterLogs,
      description:
        'isoatlas day meter: counts requests per API key and UTC day, has used-up keys marked in the KeyValueStore',
      runtime: METER_RUNTIME,
      handler: 'index.meter',
      code: lambda.Code.fromAsset(code('meter')),
      memorySize: 256,
      timeout: Duration.seconds(60),
      // CloudWatch Logs invokes it asynchronously: a failed delivery is retried (counting is
      // idempotent), and one waiting for capacity is kept as long as Lambda allows before it is lost.
      retryAttempts: 2,
      maxEventAge: Duration.hours(6),
      // A delivery it could not count, after its retries, is kept (with its log lines) to be counted
      // again by hand (OPERATIONS), never dropped without a trace.
      onFailure: new lambdaDestinations.SqsDestination(meterFailures),
      environment: {
        [METER_ENV.table]: meterTable.tableName,
        [METER_ENV.kvsArn]: keyValueStore.keyValueStoreArn,
        [METER_ENV.config]: JSON.stringify(config),
        [METER_ENV.markWriter]: markWriter!.functionName,
      },
    });
    meterTable.grant(meterFunction, 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:Query');
    // The meter reads log lines anyone can shape: it may read a key's record (its tier) and invoke
    // the mark writer, and write nothing to the store itself.
    meterFunction.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['cloudfront-keyvaluestore:GetKey'],
        resources: [keyValueStore.keyValueStoreArn],
      }),
    );
    markWriter!.grantInvoke(meterFunction);
    new logs.SubscriptionFilter(this, 'MeterSubscription', {
      logGroup: gateLogs,
      destination: new logDestinations.LambdaDestination(meterFunction),
      filterPattern: logs.FilterPattern.literal(`"${METER_MARK.split(' ')[0]}"`),
    });
    return { keyGate, keyValueStore, markWriter, meterFunction, meterTable, meterFailures };
  }

  /** The store's only writer besides the curator (edge/cloudfront/mark-writer.ts): it sets the
   * exhaustion mark of keys already in the store, nothing else, and reports the store's size as
   * metrics. IAM cannot scope PutKey to key names (no condition key for it), so the line between
   * what may write the secret and the pin and what may not is drawn by function. */
  private addMarkWriter(codeDir: string, keyValueStore: cloudfront.IKeyValueStore): lambda.Function {
    const writerLogs = new logs.LogGroup(this, 'MarkWriterLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const writer = new lambda.Function(this, 'ExhaustionMarkWriter', {
      logGroup: writerLogs,
      description:
        'isoatlas mark writer: sets the day-quota mark of existing API keys in the KeyValueStore, nothing else; reports the store size',
      runtime: METER_RUNTIME,
      handler: 'index.writeMarks',
      code: lambda.Code.fromAsset(codeDir),
      memorySize: 256,
      // Within the meter's wait for its answer (edge/cloudfront/invoke-function.ts).
      timeout: Duration.seconds(30),
      environment: { [MARK_WRITER_ENV.kvsArn]: keyValueStore.keyValueStoreArn },
    });
    writer.addToRolePolicy(
      new iam.PolicyStatement({
        actions: [
          'cloudfront-keyvaluestore:DescribeKeyValueStore',
          'cloudfront-keyvaluestore:GetKey',
          'cloudfront-keyvaluestore:PutKey',
        ],
        resources: [keyValueStore.keyValueStoreArn],
      }),
    );
    // Once a day with no marks: the size metric has a point every day, not only on days a key used
    // up its quota, so its alarm sees the store grow with `keys publish`.
    new events.Rule(this, 'KeyStoreSizeDaily', {
      description: "isoatlas: the mark writer reports the key store's size",
      schedule: events.Schedule.rate(Duration.days(1)),
      targets: [new eventTargets.LambdaFunction(writer, { event: events.RuleTargetInput.fromObject([]) })],
    });
    return writer;
  }

  /** WAF's logs in CloudWatch Logs, Authorization redacted (WAF requires the aws-waf-logs- prefix). */
  private addWafLogs(): void {
    const name = `aws-waf-logs-${this.stackName}`;
    const group = new logs.LogGroup(this, 'WafLogs', {
      logGroupName: name,
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    new wafv2.CfnLoggingConfiguration(this, 'WafLogging', {
      resourceArn: this.webAcl.attrArn,
      // The log group's ARN without the ":*" suffix CloudFormation's attribute carries.
      logDestinationConfigs: [
        Stack.of(this).formatArn({
          service: 'logs',
          resource: 'log-group',
          resourceName: group.logGroupName,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      ],
      redactedFields: [{ singleHeader: { Name: 'authorization' } }],
    });
  }
}

/** A rule of the web ACL that blocks with a problem body of its own. */
interface WafRule {
  rule: Omit<wafv2.CfnWebACL.RuleProperty, 'priority' | 'visibilityConfig'> & { name: string };
  bodyKey: string;
  body: string;
}

/** The block action of a rule: `status`, no-store, the contract's CORS headers (so a script can read
 * the answer) and the body under `bodyKey` (sent as application/json: WAF offers no problem+json). */
function blockWith(
  status: number,
  bodyKey: string,
  headers: Record<string, string> = {},
): wafv2.CfnWebACL.RuleActionProperty {
  return {
    block: {
      customResponse: {
        responseCode: status,
        customResponseBodyKey: bodyKey,
        responseHeaders: Object.entries({ ...headers, 'Cache-Control': 'no-store', ...CORS_HEADERS }).map(
          ([name, value]) => ({ name, value }),
        ),
      },
    },
  };
}

/** CloudFront hands WAF at most the first 200 headers and 8 KB of header contents (HEADER_LIMITS): a
 * header past them is one no rule sees, and a rate rule whose aggregation key lacks a component omits
 * the request ("RateBasedStatementCustomKey"). A key sent after 8 KB of filler would be counted per
 * address only, never per key. This rule blocks every such request, following AWS's guidance for
 * oversize components ("Oversize web request components in AWS WAF": the Match option in a rule whose
 * action is Block): it inspects all headers, and their oversize handling is MATCH. Its size criterion
 * can never match what WAF was handed (no header of at most 8 KB is larger than 8 KB; the size
 * constraint page warns that a size beyond what WAF can inspect never matches), so the rule matches
 * only the requests WAF could not inspect whole. It applies in every arrangement: with keys it keeps
 * every request in its key's count; without them it refuses what `isoatlas serve` refuses, and the
 * API's domain sets no cookies, so no browser sends it headers that large.
 *
 * It answers 400, not 431: the WAF Developer Guide's "Supported status codes for custom responses"
 * does not list 431 (the API reference's range, 200 to 599, would take it at deploy time). The body
 * says what the server's 431 says. A size constraint costs 1 WCU ("Size constraint rule statement"). */
function oversizeHeadersRule(): WafRule {
  const name = 'isoatlas-oversize-headers';
  const bodyKey = `${name}-400`;
  return {
    rule: {
      name,
      statement: {
        sizeConstraintStatement: {
          fieldToMatch: { headers: { matchPattern: { all: {} }, matchScope: 'ALL', oversizeHandling: 'MATCH' } },
          comparisonOperator: 'GT',
          size: HEADER_LIMITS.bytes,
          textTransformations: [{ priority: 0, type: 'NONE' }],
        },
      },
      action: blockWith(400, bodyKey),
    },
    bodyKey,
    body: JSON.stringify({ type: 'about:blank', title: 'Bad Request', status: 400, detail: HEADER_LIMITS_DETAIL }),
  };
}

const AUTHORIZATION = { singleHeader: { Name: 'authorization' } };
/** Web ACL data protection of the Authorization header: substituted (WAF writes a fixed placeholder),
 * not hashed, so a log never holds a value that identifies one key across requests; per-key figures
 * come from the gate's meter lines, which name key ids. No rule-match or rate-based details excluded. */
const AUTHORIZATION_PROTECTION: wafv2.CfnWebACL.DataProtectProperty = {
  field: { fieldType: 'SINGLE_HEADER', fieldKeys: ['authorization'] },
  action: 'SUBSTITUTION',
  excludeRuleMatchDetails: false,
  excludeRateBasedDetails: false,
};
const HAS_KEY: wafv2.CfnWebACL.StatementProperty = {
  sizeConstraintStatement: {
    fieldToMatch: AUTHORIZATION,
    comparisonOperator: 'GT',
    size: 0,
    textTransformations: [{ priority: 0, type: 'NONE' }],
  },
};
/** The header as the per-key rules read it: the scheme's letter case is the one freedom the gate
 * allows, and WAF transforms a custom key's value before using it as the aggregation key. */
const LOWERCASED = [{ priority: 0, type: 'LOWERCASE' }];

/** Requests whose key id starts with a tier's letter: a lettered id (the letter, then the random
 * part); a legacy id is the random part alone, so its underscore comes too early to match. One fixed
 * regex per tier, so a tier's size meets no regex or pattern-set quota. */
const inTier = (letter: string): wafv2.CfnWebACL.StatementProperty => ({
  regexMatchStatement: {
    regexString: `^bearer isoatlas_${letter}[a-z2-7]{${RANDOM_ID_LENGTH}}_`,
    fieldToMatch: AUTHORIZATION,
    textTransformations: LOWERCASED,
  },
});

/** A per-key rate rule: counts per Authorization value lowercased, among the requests `scope` matches. */
function perKeyRule(
  name: string,
  limit: number,
  tier: string,
  scopeDownStatement: wafv2.CfnWebACL.StatementProperty,
): WafRule {
  return rateRule(
    name,
    {
      rateBasedStatement: {
        limit: checkWafLimit(limit),
        evaluationWindowSec: ACCESS_WINDOW_SECONDS,
        aggregateKeyType: 'CUSTOM_KEYS',
        customKeys: [{ header: { name: 'authorization', textTransformations: LOWERCASED } }],
        scopeDownStatement,
      },
    },
    limit,
    `for one API key (tier ${tier})`,
  );
}

/** The WAF rules of an access arrangement: per-minute limits per IP and per key (by tier). */
function accessRules(config: AccessConfig): WafRule[] {
  const rules: WafRule[] = [];
  const perKey = tierLimits(config, config.default_tier).per_minute;
  if (config.mode === 'key-required') {
    const perIp = config.key_required.per_ip.per_minute;
    if (perIp) rules.push(perIpRule(perIp, ACCESS_WINDOW_SECONDS, 'isoatlas-rate-per-ip', 'from one IP address'));
  } else {
    const anonymous = config.open.anonymous_per_ip.per_minute;
    if (anonymous)
      rules.push(
        perIpRule(
          anonymous,
          ACCESS_WINDOW_SECONDS,
          'isoatlas-anonymous-per-ip',
          'from one IP address without an API key',
          { notStatement: { statement: HAS_KEY } },
        ),
      );
    // Keyed requests are out of the anonymous rule, so they have their own address ceiling. It comes
    // before the per-key rules: a request it blocks is not counted by them (Block ends evaluation).
    const keyed = config.open.keyed_per_ip.per_minute;
    if (keyed)
      rules.push(
        perIpRule(keyed, ACCESS_WINDOW_SECONDS, 'isoatlas-keyed-per-ip', 'from one IP address with API keys', HAS_KEY),
      );
  }
  const tiers = Object.keys(config.mode === 'open' ? config.open.tiers : config.key_required.tiers);
  const others = tiers.filter((t) => t !== config.default_tier);
  if (perKey) {
    // The default tier: every keyed request whose id carries no other tier's letter, legacy ids
    // included. A tier without a minute limit is left out too, so it is not held to this one.
    const notOthers = others.map((t) => ({ notStatement: { statement: inTier(config.tier_letters[t]) } }));
    const scope = notOthers.length ? { andStatement: { statements: [HAS_KEY, ...notOthers] } } : HAS_KEY;
    rules.push(perKeyRule('isoatlas-rate-per-key', perKey, config.default_tier, scope));
  }
  for (const tier of others.filter((t) => tierLimits(config, t).per_minute !== undefined)) {
    rules.push(
      perKeyRule(
        `isoatlas-rate-per-key-${tier.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`,
        tierLimits(config, tier).per_minute!,
        tier,
        inTier(config.tier_letters[tier]),
      ),
    );
  }
  return rules;
}

function perIpRule(
  limit: number,
  windowSeconds: number,
  name: string,
  who: string,
  scopeDownStatement?: wafv2.CfnWebACL.StatementProperty,
): WafRule {
  return rateRule(
    name,
    {
      rateBasedStatement: {
        limit: checkWafLimit(limit),
        aggregateKeyType: 'IP',
        evaluationWindowSec: windowSeconds,
        scopeDownStatement,
      },
    },
    limit,
    who,
    windowSeconds,
  );
}

/** A rate rule whose refusal is the same kind of answer the edge gives: 429, Retry-After (the rule's
 * window), a problem body (blockWith). */
function rateRule(
  name: string,
  statement: wafv2.CfnWebACL.StatementProperty,
  limit: number,
  who: string,
  windowSeconds = ACCESS_WINDOW_SECONDS,
): WafRule {
  const bodyKey = `${name}-429`;
  return {
    rule: {
      name,
      statement,
      action: blockWith(429, bodyKey, { 'Retry-After': String(windowSeconds) }),
    },
    bodyKey,
    body: wafTooManyBody(limit, windowSeconds, who),
  };
}

function visibility(metricName: string, sampled: boolean): wafv2.CfnWebACL.VisibilityConfigProperty {
  return { cloudWatchMetricsEnabled: true, metricName, sampledRequestsEnabled: sampled };
}

function checkPrefix(prefix: string): string {
  if (
    prefix !== '' &&
    (!prefix.endsWith('/') ||
      prefix.startsWith('/') ||
      prefix.includes('//') ||
      !/^[A-Za-z0-9!_.*'()/-]+$/.test(prefix))
  ) {
    throw new Error(
      `prefix "${prefix}" must be empty or a key prefix like "atlas/" (ending in "/", not starting with it)`,
    );
  }
  return prefix;
}

function checkWafLimit(limit: number): number {
  // WAF accepts 10 … 2,000,000,000 requests per evaluation window.
  if (!Number.isInteger(limit) || limit < 10 || limit > 2_000_000_000)
    throw new Error(`a WAF rate limit must be an integer from 10 to 2e9, not ${limit}`);
  return limit;
}

function checkRegion(region: string): string {
  if (!/^[a-z]{2}(-[a-z]+)+-\d$/.test(region))
    throw new Error(`bucketRegion "${region}" is not an AWS region name (e.g. eu-west-1)`);
  return region;
}

function checkBucketName(name: string): void {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) || name.includes('..') || /^\d+\.\d+\.\d+\.\d+$/.test(name)) {
    throw new Error(`"${name}" is not a valid S3 bucket name`);
  }
}

/** Refuses a bundle built for other settings: one for another bucket would serve nothing. The settings are inlined into
 * the bundle as JSON string literals, so the names must appear in it. */
function checkEdgeBundle(dir: string, config: EdgeBundleConfig): void {
  const file = join(dir, 'index.js');
  if (!existsSync(file)) throw new Error(`${file} does not exist: build the edge bundle first (build/bundle/edge.ts)`);
  const text = readFileSync(file, 'utf8');
  const expected = [config.s3!.bucket, config.s3!.region];
  const missing = expected.filter((name) => !text.includes(JSON.stringify(name)));
  if (missing.length)
    throw new Error(`the edge bundle in ${dir} was not built for this stack (no mention of ${missing.join(', ')})`);
}

/** The problem body of a WAF 429 (RFC 9457, as the edge's own; WAF bodies are static, so it names no
 * request instance). */
export function wafTooManyBody(
  limit: number,
  windowSeconds = WAF_WINDOW_SECONDS,
  who = 'from one IP address at the CDN',
): string {
  const window = windowSeconds === 60 ? 'a minute' : `${windowSeconds / 60} minutes`;
  return JSON.stringify({
    type: 'about:blank',
    title: 'Too Many Requests',
    status: 429,
    detail: `rate limit exceeded: more than ${limit} requests in ${window} ${who}; retry after ${windowSeconds} s`,
  });
}

/** The warning id of a keyed arrangement on CloudFront's default certificate. */
export const KEYS_OVER_OLD_TLS = 'isoatlas:keys-over-default-certificate';
// CloudFront fixes the security policy of its default *.cloudfront.net certificate at TLSv1 whatever
// the distribution asks (CloudFront API: ViewerCertificate, MinimumProtocolVersion). The viewer's TLS
// version is documented only as CloudFront-Viewer-TLS in an origin request policy ("Add CloudFront
// request headers"), which reaches the origin on a cache miss, not the gate on every request; so only
// a custom domain keeps keys off TLS 1.0 and 1.1.
const KEYS_OVER_OLD_TLS_TEXT =
  'API keys would travel over TLS 1.0 and 1.1 too: CloudFront fixes the default *.cloudfront.net certificate at the TLSv1 security policy. ' +
  'Give the distribution a custom domain (ISOATLAS_DOMAIN and ISOATLAS_CERTIFICATE_ARN, or customDomain), which sets TLSv1.2_2021.';

/** Distribution settings of a custom domain (none without one). */
function customDomain(
  scope: Construct,
  domain: IsoatlasCdnProps['customDomain'],
): Partial<cloudfront.DistributionProps> {
  if (!domain) return {};
  if (domain.names.length === 0 || domain.names.some((n) => !/^(\*\.)?([a-z0-9-]+\.)+[a-z]{2,}$/i.test(n))) {
    throw new Error(
      `customDomain.names must be domain names (e.g. atlas.example.org); got ${JSON.stringify(domain.names)}`,
    );
  }
  if (!/^arn:aws:acm:us-east-1:\d{12}:certificate\/[\w-]+$/.test(domain.certificateArn)) {
    throw new Error(
      `customDomain.certificateArn must be an ACM certificate in us-east-1 (CloudFront uses certificates from there only); got "${domain.certificateArn}"`,
    );
  }
  return {
    domainNames: domain.names,
    certificate: acm.Certificate.fromCertificateArn(scope, 'Certificate', domain.certificateArn),
    minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
    sslSupportMethod: cloudfront.SSLMethod.SNI,
  };
}
