// `isoatlas keys …`: issue, list, revoke, show tiers, and publish the edge view to the CDN's KeyValueStore.
import { Option, type Command } from 'commander';
import type { CloudFrontKeyValueStoreClient } from '@aws-sdk/client-cloudfront-keyvaluestore';
import { issueKey, type KeyRecord, loadRegistry, readSecret, registryPath, revokeKey } from './registry.js';
import { isLegacyId } from '../../edge/access/key-format.js';
import {
  KVS_ARN,
  keyEntry,
  KEY_ENTRY_PREFIX,
  kvsEntries,
  REVOKED_KEY_EXPIRY_DAYS,
  revocationExpired,
} from '../../edge/cloudfront/kvs-layout.js';
import { KVS_REFUSE_FRACTION, KVS_SIZE_LIMIT_BYTES, KVS_WARN_FRACTION } from '../../edge/cloudfront/kvs-capacity.js';
import { refusal, sizeReport, sizeWarning } from './store-size.js';
import { UsageError } from '../common/errors.js';
import { StorageError } from '../common/storage-errors.js';
import { readAccessConfigFile } from '../common/access-config-file.js';
import { log } from '../../edge/server/logger.js';

const limitsText = (l: { per_minute?: number; per_day?: number }) =>
  [l.per_minute && `${l.per_minute}/min`, l.per_day && `${l.per_day}/day`].filter(Boolean).join(', ') || 'unlimited';

/** Adds `keys` under `parent` (created through it, so the subcommands inherit its settings). */
export function addKeysCommand(parent: Command, defaultKeysDir: string): Command {
  const keys = parent
    .command('keys')
    .description('Manage API keys: only a keyed hash of each key is stored; the key is shown once.');
  const dirOption = [
    '--keys-dir <dir>',
    'directory of the key registry and the server secret (or set ISOATLAS_KEY_SECRET)',
    defaultKeysDir,
  ] as const;

  keys
    .command('issue')
    .description('Issue a new key and print it once on standard output.')
    .requiredOption('--name <name>', 'who the key is for')
    .requiredOption('--affiliation <org>', 'their organisation')
    .requiredOption('--use <text>', 'intended use, in a sentence')
    .option('--tier <tier>', 'quota tier (see `isoatlas keys tiers`); its letter starts the key id', undefined)
    .option('--access-config <file>', 'access config naming the tiers and their letters')
    .option(...dirOption)
    .action(
      async (o: {
        name: string;
        affiliation: string;
        use: string;
        tier?: string;
        accessConfig?: string;
        keysDir: string;
      }) => {
        const config = readAccessConfigFile(o.accessConfig);
        const tier = o.tier ?? config.default_tier;
        if (!config.open.tiers[tier] || !config.key_required.tiers[tier]) {
          throw new UsageError(`unknown tier "${tier}"; tiers: ${Object.keys(config.key_required.tiers).join(', ')}`);
        }
        const { key, record } = await issueKey(o.keysDir, {
          name: o.name,
          affiliation: o.affiliation,
          use: o.use,
          tier,
          letter: config.tier_letters[tier],
        });
        process.stdout.write(`${key}\n`);
        log.info(
          `issued key ${record.id} (tier ${tier}) to ${record.name}, ${record.affiliation}. It is shown only this once: store it now.`,
        );
      },
    );

  keys
    .command('list')
    .description('List issued keys (never the keys themselves).')
    .option(...dirOption)
    .action((o: { keysDir: string }) => {
      const registry = loadRegistry(o.keysDir);
      if (registry.keys.length === 0) return log.info(`no keys in ${registryPath(o.keysDir)}`);
      // A legacy id (issued before tiers had letters) is held to the default tier's minute limit at the CDN.
      const format = (id: string) => (isLegacyId(id) ? 'legacy' : `letter ${id[0]}`);
      const rows = registry.keys.map((k) => [
        k.id,
        k.tier,
        format(k.id),
        k.revoked_at ? `revoked ${k.revoked_at}` : 'active',
        k.created_at,
        k.name,
        k.affiliation,
        k.use,
      ]);
      const header = ['id', 'tier', 'id format', 'status', 'created', 'name', 'affiliation', 'use'];
      const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
      for (const row of [header, ...rows])
        process.stdout.write(
          `${row
            .map((c, i) => c.padEnd(widths[i]))
            .join('  ')
            .trimEnd()}\n`,
        );
    });

  keys
    .command('revoke')
    .description(
      'Revoke a key. The local server refuses it within seconds; the CDN once `keys publish` has written it to the KeyValueStore and CloudFront has propagated it. ' +
        `The CDN answers it as revoked for ${REVOKED_KEY_EXPIRY_DAYS} days, then (once a publish has removed its entry) as an unknown key: a 401 either way.`,
    )
    .argument('<id>', 'key id, as shown by `isoatlas keys list`')
    .option(...dirOption)
    .action(async (id: string, o: { keysDir: string }) => {
      const record = await revokeKey(o.keysDir, id);
      log.info(`key ${record.id} (${record.name}) revoked at ${record.revoked_at}`);
    });

  keys
    .command('tiers')
    .description('Show the quota tiers of both access arrangements.')
    .option('--access-config <file>', 'access config to read instead of the defaults')
    .action((o: { accessConfig?: string }) => {
      const c = readAccessConfigFile(o.accessConfig);
      const out = (line: string) => process.stdout.write(`${line}\n`);
      out(
        `open (A): anonymous ${limitsText(c.open.anonymous_per_ip)} per IP; with keys ${limitsText(c.open.keyed_per_ip)} per IP`,
      );
      for (const [tier, l] of Object.entries(c.open.tiers)) out(`  tier ${tier}: ${limitsText(l)} per key`);
      out(`key-required (B): ${limitsText(c.key_required.per_ip)} per IP, whatever the keys`);
      for (const [tier, l] of Object.entries(c.key_required.tiers)) out(`  tier ${tier}: ${limitsText(l)} per key`);
      out(`default tier for new keys: ${c.default_tier}`);
      out(
        `id letters: ${Object.entries(c.tier_letters)
          .map(([t, l]) => `${t} ${l}`)
          .join(', ')}`,
      );
      out(`per IP on the local server: an IPv4 address, or an IPv6 /${c.ipv6_prefix} (ipv6_prefix)`);
    });

  keys
    .command('publish')
    .description(
      "Make the CloudFront KeyValueStore of the CDN deployment hold every key's hash, tier and revocation (no names) and the " +
        'secret that keys the hashes; only differences are written. The edge sees a change once CloudFront has propagated it. ' +
        `Removes the entries of keys revoked over ${REVOKED_KEY_EXPIRY_DAYS} days ago (the registry keeps them) and nothing else. ` +
        `Reports the store's size and the keys it can still take; warns from ${KVS_WARN_FRACTION * 100}% of its ${KVS_SIZE_LIMIT_BYTES.toLocaleString('en-US')}-byte limit, ` +
        `and from ${KVS_REFUSE_FRACTION * 100}% adds no new keys (exit 4) while still writing revocations and removals (docs/OPERATIONS.md, "The key store's size").`,
    )
    .requiredOption('--kvs <arn>', 'the KeyValueStore ARN (the KeyValueStoreArn output of the stack)')
    .option(
      '--endpoint <url>',
      'KeyValueStore API endpoint, for a local stand-in (a host name, e.g. http://localhost:8080)',
    )
    .option(
      '--access-config <file>',
      'access config naming the tiers (for the legacy-key warning and the room the report gives)',
    )
    .addOption(new Option('--waf-tier <tier=arn>', 'no longer used').hideHelp())
    .option(...dirOption)
    .action(async (o: { kvs: string; endpoint?: string; accessConfig?: string; wafTier?: string; keysDir: string }) => {
      if (o.wafTier !== undefined) {
        throw new UsageError(
          '--waf-tier is no longer needed: WAF reads the tier from the letter in a key id (docs/OPERATIONS.md, keys); drop the option',
        );
      }
      if (!KVS_ARN.test(o.kvs)) {
        throw new UsageError(
          `--kvs must be a KeyValueStore ARN like arn:aws:cloudfront::123456789012:key-value-store/<id>, not "${o.kvs}"`,
        );
      }
      const config = readAccessConfigFile(o.accessConfig);
      const tiers = [...Object.keys(config.open.tiers), ...Object.keys(config.key_required.tiers)];
      const r = await publishKeys(await kvsClient(o.endpoint), o.kvs, o.keysDir, { tiers });
      const ids = (entries: readonly string[]) => entries.map((e) => e.slice(KEY_ENTRY_PREFIX.length));
      log.info(
        `published ${r.keys} keys to ${o.kvs}: ${r.put} written, ${r.deleted} removed, ${r.unchanged} unchanged`,
      );
      if (r.removed.length > 0)
        log.info(
          `removed ${r.removed.length} key(s) revoked over ${REVOKED_KEY_EXPIRY_DAYS} days ago from the store: ${ids(r.removed).join(', ')}; the registry keeps them (keys list shows them revoked) and the gate now answers them as unknown keys`,
        );
      log.info(sizeReport(o.kvs, r.size, r.counted));
      if (r.unknown.length > 0)
        log.warn(
          `${r.unknown.length} key entr${r.unknown.length === 1 ? 'y' : 'ies'} in ${o.kvs} belong to no key of ${registryPath(o.keysDir)} (${ids(r.unknown).join(', ')}): publish leaves them, and the gate still checks keys against them. If they come from another registry, publish from it (--keys-dir); if not wanted, delete each: aws cloudfront-keyvaluestore delete-key --kvs-arn ${o.kvs} --key key:<id> --if-match <ETag of describe-key-value-store>`,
        );
      if (r.refused.length > 0) throw new StorageError(refusal(o.kvs, r.size, ids(r.refused), r.foreign, r.nextExpiry));
      const warning = sizeWarning(o.kvs, r.size);
      if (warning) log.warn(warning);
      const legacy = new Map<string, string[]>();
      for (const k of loadRegistry(o.keysDir).keys) {
        if (k.revoked_at || !isLegacyId(k.id) || k.tier === config.default_tier) continue;
        legacy.set(k.tier, [...(legacy.get(k.tier) ?? []), k.id]);
      }
      for (const [tier, ids] of legacy) {
        log.warn(
          `${ids.length} key(s) of tier ${tier} have legacy ids without a tier letter (${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}): the CDN holds them to the default tier's per-minute limit; issue their holders new keys and revoke these (docs/OPERATIONS.md, keys)`,
        );
      }
    });

  return keys;
}

/** A KeyValueStore client. The API is global and signed with SigV4A, whose signer is a separate
 * package that registers itself when imported. */
export async function kvsClient(endpoint?: string) {
  await import('@aws-sdk/signature-v4a');
  const { CloudFrontKeyValueStoreClient } = await import('@aws-sdk/client-cloudfront-keyvaluestore');
  if (!endpoint) return new CloudFrontKeyValueStoreClient({ region: 'us-east-1' });
  // The store's endpoint rules put the account id in front of the endpoint's host
  // (<account>.<host>); a local stand-in has no such names, so they are resolved to its host.
  const target = new URL(endpoint);
  if (/^[\d.]+$|^\[/.test(target.hostname))
    throw new UsageError(
      `--endpoint needs a host name (e.g. http://localhost:${target.port || 80}), not an IP address: the client prefixes the account id to it`,
    );
  const [{ lookup }, { Agent: HttpAgent }, { Agent: HttpsAgent }, { NodeHttpHandler }] = await Promise.all([
    import('node:dns'),
    import('node:http'),
    import('node:https'),
    import('@smithy/node-http-handler'),
  ]);
  const toTarget = ((hostname: string, options: object, callback: never) =>
    lookup(
      hostname.endsWith(`.${target.hostname}`) ? target.hostname : hostname,
      options,
      callback,
    )) as unknown as typeof lookup;
  const requestHandler = new NodeHttpHandler({
    httpAgent: new HttpAgent({ lookup: toTarget }),
    httpsAgent: new HttpsAgent({ lookup: toTarget }),
  });
  return new CloudFrontKeyValueStoreClient({ region: 'us-east-1', endpoint, requestHandler });
}

/** Publishes the registry in `keysDir` to the store at `arn`, as of `now` (revocations older than
 * the expiry are removed). `tiers`: the access config's, for the room the report gives. */
export async function publishKeys(
  client: CloudFrontKeyValueStoreClient,
  arn: string,
  keysDir: string,
  options: { now?: Date; tiers?: readonly string[] } = {},
) {
  const secret = readSecret(keysDir, { create: false });
  if (!secret)
    throw new UsageError(
      `no key secret in ${keysDir} (and ISOATLAS_KEY_SECRET is unset): issue a key first, or point --keys-dir at the registry`,
    );
  const now = options.now ?? new Date();
  const records = loadRegistry(keysDir).keys;
  const remove = new Set(records.filter((k) => revocationExpired(k, now)).map((k) => keyEntry(k.id)));
  const tiers = [...(options.tiers ?? []), ...records.map((k) => k.tier)];
  const largestTier = tiers.reduce((a, b) => (b.length > a.length ? b : a), 'standard');
  const { publishToStore } = await import('./kvs.js');
  const result = await publishToStore(client, arn, kvsEntries(records, secret, now), { remove, largestTier });
  return { keys: records.length, ...result, nextExpiry: nextExpiry(records, now) };
}

/** When the next revoked keys' entries expire, and how many then. */
function nextExpiry(records: readonly KeyRecord[], now: Date): { date: Date; keys: number } | null {
  const pending = records
    .filter((k) => k.revoked_at && !revocationExpired(k, now) && !Number.isNaN(Date.parse(k.revoked_at)))
    .map((k) => Date.parse(k.revoked_at!) + REVOKED_KEY_EXPIRY_DAYS * 86_400_000);
  if (pending.length === 0) return null;
  const first = Math.min(...pending);
  const day = (t: number) => new Date(t).toISOString().slice(0, 10);
  return { date: new Date(first), keys: pending.filter((t) => day(t) === day(first)).length };
}
