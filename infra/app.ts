// `npm run synth`: builds the edge bundle and synthesizes the CDN stack into a cloud assembly
// (cdk.out/), offline: no AWS credentials, no lookups. Deploy the result with the CDK CLI, e.g.
// `npx aws-cdk@2 deploy --app cdk.out` (the account must be bootstrapped in us-east-1).
//
// Settings (environment variables):
//   ISOATLAS_BUCKET        bucket name                           (default isoatlas-atlas-example)
//   ISOATLAS_BUCKET_REGION the bucket's region (default us-east-1); another region adds the stack
//                          IsoatlasBucket there, deployed after IsoatlasCdn (it reads its distribution)
//   ISOATLAS_PREFIX        key prefix of the atlas in the bucket  (default '', else ending in '/')
//   ISOATLAS_ACCESS        open | key-required | '' (no access control: no key gate, no meter)
//   ISOATLAS_ACCESS_CONFIG path to a limits JSON file (as `isoatlas serve --access-config`)
//   ISOATLAS_WAF_LOGS      1: WAF logs to CloudWatch Logs, Authorization redacted
//   ISOATLAS_WAF_LIMIT     without access control: WAF requests per IP per 5 minutes (default 6000)
//   ISOATLAS_STRUCTURE_BASE  base URL of structure redirects (e.g. a custom domain); default:
//                            root-relative (/releases/… on whichever host was asked)
//   ISOATLAS_DOMAIN        custom domain names, comma-separated (with ISOATLAS_CERTIFICATE_ARN)
//   ISOATLAS_CERTIFICATE_ARN  ACM certificate for them, in us-east-1
//   ISOATLAS_KVS_ARN       adopt a KeyValueStore an earlier stack left (its KeyValueStoreArn output)
//   ISOATLAS_ALARM_EMAIL   an address the alarms' SNS topic emails (it confirms the subscription)
//   ISOATLAS_ACCOUNT / CDK_DEFAULT_ACCOUNT       account id       (default 111111111111)
//   ISOATLAS_CDK_OUT       output directory                       (default <repo>/cdk.out)
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { bundleEdge, bundleMeter, type EdgeBundle } from '../build/bundle/edge.js';
import type { AccessMode } from '../edge/access/config.js';
import { IsoatlasBucketStack } from './bucket.js';
import {
  DEFAULT_ACCOUNT,
  DEFAULT_WAF_REQUESTS_PER_5MIN_PER_IP,
  EDGE_REGION,
  IsoatlasCdnStack,
  SYNTH_CONTEXT,
  edgeBundleConfig,
  type IsoatlasCdnProps,
} from './stack.js';

const env = process.env;

function fail(message: string): never {
  console.error(`synth: ${message}`);
  process.exit(2);
}

function accessSettings(meterCodeDir: string): IsoatlasCdnProps['access'] {
  const mode = env.ISOATLAS_ACCESS ?? '';
  if (mode === '') return undefined;
  if (mode !== 'open' && mode !== 'key-required')
    fail(`ISOATLAS_ACCESS must be open, key-required or empty, not "${mode}"`);
  let config: unknown;
  if (env.ISOATLAS_ACCESS_CONFIG) {
    try {
      config = JSON.parse(readFileSync(env.ISOATLAS_ACCESS_CONFIG, 'utf8'));
    } catch (err) {
      fail(`cannot read ISOATLAS_ACCESS_CONFIG ${env.ISOATLAS_ACCESS_CONFIG}: ${(err as Error).message}`);
    }
  }
  return { mode: mode as AccessMode, config, meterCodeDir, wafLogs: env.ISOATLAS_WAF_LOGS === '1' };
}

function customDomainSettings() {
  const names = (env.ISOATLAS_DOMAIN ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const certificateArn = env.ISOATLAS_CERTIFICATE_ARN ?? '';
  if (!names.length && !certificateArn) return undefined;
  if (!names.length || !certificateArn)
    fail(
      'a custom domain needs both ISOATLAS_DOMAIN (its names) and ISOATLAS_CERTIFICATE_ARN (an ACM certificate in us-east-1)',
    );
  return { names, certificateArn };
}

async function main() {
  const started = Date.now();
  const repo = fileURLToPath(new URL('..', import.meta.url));
  const outdir = resolve(env.ISOATLAS_CDK_OUT || join(repo, 'cdk.out'));
  const edgeCodeDir = join(outdir, 'edge-bundle');
  const wafLimit = env.ISOATLAS_WAF_LIMIT ? Number(env.ISOATLAS_WAF_LIMIT) : DEFAULT_WAF_REQUESTS_PER_5MIN_PER_IP;

  const settings = {
    bucketName: env.ISOATLAS_BUCKET || 'isoatlas-atlas-example',
    bucketRegion: env.ISOATLAS_BUCKET_REGION || EDGE_REGION,
    prefix: env.ISOATLAS_PREFIX ?? '',
    access: accessSettings(join(outdir, 'meter-bundle')),
  };

  // The bundle and the stack come from the same settings, so they agree on bucket and prefix.
  // structureBaseUrl stays unset unless given: the distribution's domain is a deploy-time token, and
  // without it the edge's structure redirects are root-relative (into /releases/… of the same host).
  let bundle: EdgeBundle;
  try {
    bundle = await bundleEdge({
      outDir: edgeCodeDir,
      ...edgeBundleConfig({ ...settings, structureBaseUrl: env.ISOATLAS_STRUCTURE_BASE || undefined }),
    });
    if (settings.access) await bundleMeter({ outDir: settings.access.meterCodeDir! });
  } catch (err) {
    fail((err as Error).message);
  }

  // CloudFormation validation on: a finding fails the synth (exit 2) rather than the deploy.
  const app = new App({ outdir, context: SYNTH_CONTEXT });
  let stack: IsoatlasCdnStack;
  let bucketStack: IsoatlasBucketStack | undefined;
  const account = env.ISOATLAS_ACCOUNT || env.CDK_DEFAULT_ACCOUNT || DEFAULT_ACCOUNT;
  try {
    stack = new IsoatlasCdnStack(app, 'IsoatlasCdn', {
      ...settings,
      env: { account, region: EDGE_REGION },
      wafRequestsPer5MinPerIp: wafLimit,
      edgeCodeDir,
      customDomain: customDomainSettings(),
      keyValueStoreArn: env.ISOATLAS_KVS_ARN || undefined,
      alarmEmail: env.ISOATLAS_ALARM_EMAIL || undefined,
    });
    if (settings.bucketRegion !== EDGE_REGION) {
      bucketStack = new IsoatlasBucketStack(app, 'IsoatlasBucket', {
        bucketName: settings.bucketName,
        distributionArn: stack.distribution.distributionArn,
        env: { account, region: settings.bucketRegion },
      });
    }
  } catch (err) {
    fail((err as Error).message);
  }
  const assembly = app.synth();
  // Warnings in capitals on standard error: each is a risk the deploy would carry (KEYS_OVER_OLD_TLS).
  for (const artifact of assembly.stacks)
    for (const m of artifact.messages)
      if (m.level === 'warning' || m.level === 'error')
        console.error(`\n*** ${m.level.toUpperCase()} (${artifact.stackName}) ***\n${m.entry.data}\n`);
  const template = join(assembly.directory, stack.templateFile);
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(`template   ${relative(process.cwd(), template) || template}`);
  if (bucketStack)
    console.log(
      `template   ${relative(process.cwd(), join(assembly.directory, bucketStack.templateFile))} (the bucket, in ${settings.bucketRegion}; deploy after IsoatlasCdn)`,
    );
  console.log(
    `edge code  ${relative(process.cwd(), bundle.file)}: ${kib(bundle.bytes)} (${kib(bundle.gzipBytes)} gzipped)`,
  );
  const limits = settings.access ? 'WAF per-minute limits per key and IP' : `WAF ${wafLimit} requests/5 min per IP`;
  console.log(
    `access     ${settings.access ? `${settings.access.mode} (key gate + KeyValueStore)` : 'none (no key gate)'}; ${limits}; ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}

main().catch((err: Error) => fail(err.message));
