// `isoatlas keys …`: issue, list, revoke, show tiers, and publish the edge view to DynamoDB.
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import type { DynamoDBClient, WriteRequest } from '@aws-sdk/client-dynamodb';
import { resolveAccessConfig, type AccessConfig } from '../../edge/access/config.js';
import { issueKey, loadRegistry, registryPath, revokeKey } from './registry.js';
import { UsageError } from '../errors.js';

export function readAccessConfig(path: string | undefined, mode?: AccessConfig['mode']): AccessConfig {
  if (!path) return resolveAccessConfig({}, mode);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read access config ${path}: ${(err as Error).message}`);
  }
  return resolveAccessConfig(parsed, mode);
}

const limitsText = (l: { per_minute?: number; per_day?: number }) =>
  [l.per_minute && `${l.per_minute}/min`, l.per_day && `${l.per_day}/day`].filter(Boolean).join(', ') || 'unlimited';

/** Adds `keys` under `parent` (created through it, so the subcommands inherit its settings). */
export function addKeysCommand(parent: Command, defaultKeysDir: string, log: (line: string) => void): Command {
  const keys = parent.command('keys').description('Manage API keys: only a keyed hash of each key is stored; the key is shown once.');
  const dirOption = ['--keys-dir <dir>', 'directory of the key registry and the server secret (or set ISOATLAS_KEY_SECRET)', defaultKeysDir] as const;

  keys
    .command('issue')
    .description('Issue a new key and print it once on standard output.')
    .requiredOption('--name <name>', 'who the key is for')
    .requiredOption('--affiliation <org>', 'their organisation')
    .requiredOption('--use <text>', 'intended use, in a sentence')
    .option('--tier <tier>', 'quota tier (see `isoatlas keys tiers`)', undefined)
    .option('--access-config <file>', 'access config naming the tiers')
    .option(...dirOption)
    .action(async (o: { name: string; affiliation: string; use: string; tier?: string; accessConfig?: string; keysDir: string }) => {
      const config = readAccessConfig(o.accessConfig);
      const tier = o.tier ?? config.default_tier;
      if (!config.open.tiers[tier] || !config.key_required.tiers[tier]) {
        throw new UsageError(`unknown tier "${tier}"; tiers: ${Object.keys(config.key_required.tiers).join(', ')}`);
      }
      const { key, record } = await issueKey(o.keysDir, { name: o.name, affiliation: o.affiliation, use: o.use, tier });
      process.stdout.write(`${key}\n`);
      log(`issued key ${record.id} (tier ${tier}) to ${record.name}, ${record.affiliation}. It is shown only this once: store it now.`);
    });

  keys
    .command('list')
    .description('List issued keys (never the keys themselves).')
    .option(...dirOption)
    .action((o: { keysDir: string }) => {
      const registry = loadRegistry(o.keysDir);
      if (registry.keys.length === 0) return log(`no keys in ${registryPath(o.keysDir)}`);
      const rows = registry.keys.map((k) => [k.id, k.tier, k.revoked_at ? `revoked ${k.revoked_at}` : 'active', k.created_at, k.name, k.affiliation, k.use]);
      const header = ['id', 'tier', 'status', 'created', 'name', 'affiliation', 'use'];
      const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
      for (const row of [header, ...rows]) process.stdout.write(`${row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()}\n`);
    });

  keys
    .command('revoke')
    .description('Revoke a key. The local server refuses it within seconds; the CDN once published (within 30 s).')
    .argument('<id>', 'key id, as shown by `isoatlas keys list`')
    .option(...dirOption)
    .action(async (id: string, o: { keysDir: string }) => {
      const record = await revokeKey(o.keysDir, id);
      log(`key ${record.id} (${record.name}) revoked at ${record.revoked_at}`);
    });

  keys
    .command('tiers')
    .description('Show the quota tiers of both access arrangements.')
    .option('--access-config <file>', 'access config to read instead of the defaults')
    .action((o: { accessConfig?: string }) => {
      const c = readAccessConfig(o.accessConfig);
      const out = (line: string) => process.stdout.write(`${line}\n`);
      out(`open (A): anonymous ${limitsText(c.open.anonymous_per_ip)} per IP`);
      for (const [tier, l] of Object.entries(c.open.tiers)) out(`  tier ${tier}: ${limitsText(l)} per key`);
      out(`key-required (B): ${limitsText(c.key_required.per_ip)} per IP, whatever the keys`);
      for (const [tier, l] of Object.entries(c.key_required.tiers)) out(`  tier ${tier}: ${limitsText(l)} per key`);
      out(`default tier for new keys: ${c.default_tier}`);
    });

  keys
    .command('publish')
    .description('Write the edge view of every key (id, hash, tier, revocation; no names) to the DynamoDB keys table of the CDN deployment.')
    .requiredOption('--table <name>', 'DynamoDB keys table')
    .option('--endpoint <url>', 'DynamoDB endpoint (for a local DynamoDB-compatible server)')
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .option(...dirOption)
    .action(async (o: { table: string; endpoint?: string; region: string; keysDir: string }) => {
      const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
      const n = await publishKeys(new DynamoDBClient({ region: o.region, endpoint: o.endpoint }), o.table, o.keysDir);
      log(`published ${n} keys to DynamoDB table ${o.table}`);
    });

  return keys;
}

export async function publishKeys(client: DynamoDBClient, table: string, keysDir: string): Promise<number> {
  const records = loadRegistry(keysDir).keys;
  for (let i = 0; i < records.length; i += 25) {
    let requests: WriteRequest[] = records.slice(i, i + 25).map((k) => ({
      PutRequest: {
        Item: { id: { S: k.id }, hash: { S: k.hash }, tier: { S: k.tier }, ...(k.revoked_at ? { revoked_at: { S: k.revoked_at } } : {}) },
      },
    }));
    for (let attempt = 0; requests.length && attempt < 5; attempt++) {
      const { BatchWriteItemCommand } = await import('@aws-sdk/client-dynamodb');
      const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests } }));
      requests = out.UnprocessedItems?.[table] ?? [];
    }
    if (requests.length) throw new Error(`DynamoDB did not accept ${requests.length} key records after 5 attempts; run publish again`);
  }
  return records.length;
}
