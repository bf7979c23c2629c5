// `isoatlas keys publish`: makes the CloudFront KeyValueStore of the CDN deployment hold what the key
// gate needs (edge/cloudfront/kvs-layout.ts). It reads the store, writes only what differs, keeps
// the meter's exhaustion marks, deletes only its own keys' expired entries, and adds no key past the
// store's room (edge/cloudfront/kvs-capacity.ts). Writes are conditional on the store's ETag, so a
// publish racing the day meter retries on the newer store instead of undoing the meter's change.
import {
  ConflictException,
  DescribeKeyValueStoreCommand,
  GetKeyCommand,
  ListKeysCommand,
  ServiceQuotaExceededException,
  UpdateKeysCommand,
  type CloudFrontKeyValueStoreClient,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import {
  byteLength,
  entryBytes,
  KVS_KEY_LIMIT_BYTES,
  KVS_UPDATE_BATCH,
  KVS_VALUE_LIMIT_BYTES,
} from '../../edge/cloudfront/kvs-capacity.js';
import {
  CURRENT_RELEASE_ENTRY,
  decodeKeyRecord,
  encodeKeyRecord,
  KEY_ENTRY_PREFIX,
  REVOKED_KEY_EXPIRY_DAYS,
} from '../../edge/cloudfront/kvs-layout.js';
import { BadInputError } from '../common/errors.js';
import { StorageError } from '../common/storage-errors.js';
import { foreignBytes, StoreLedger, type StoreSize } from './store-size.js';

const ATTEMPTS = 5;

export interface KvsPublishOptions {
  /** Entries publish may delete: its own keys' entries whose revocation expired. Nothing else is. */
  remove?: ReadonlySet<string>;
  /** The tier whose key entries are largest, for the room the report gives (default: standard). */
  largestTier?: string;
}

export interface KvsPublishResult {
  put: number;
  deleted: number;
  unchanged: number;
  /** Entries deleted (each in `remove`). */
  removed: string[];
  /** New key entries left out: the store would have passed what publish lets it reach. */
  refused: string[];
  /** Key entries in the store that are neither in `desired` nor in `remove`: left as they are. */
  unknown: string[];
  /** The store after this publish, as publish counts it. */
  size: StoreSize;
  /** The store's own count of its bytes after this publish. */
  counted: number | undefined;
  /** Bytes of the entries neither this registry's publish nor `isoatlas publish` wrote. */
  foreign: number;
}

export async function readStore(
  client: CloudFrontKeyValueStoreClient,
  arn: string,
): Promise<{ etag: string; entries: Map<string, string>; counted: number | undefined }> {
  const described = await client.send(new DescribeKeyValueStoreCommand({ KvsARN: arn }));
  const entries = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await client.send(new ListKeysCommand({ KvsARN: arn, NextToken: token, MaxResults: 50 }));
    for (const item of page.Items ?? []) entries.set(item.Key!, item.Value!);
    token = page.NextToken;
  } while (token);
  return { etag: described.ETag!, entries, counted: described.TotalSizeInBytes };
}

/** Makes the store hold `desired` and removes the entries of `remove` it holds, deletions first (they
 * make room). Each UpdateKeys call is all or nothing and names the ETag the previous one returned, so
 * a publish cut short leaves the first calls' changes, and the next publish writes the rest. */
export async function publishToStore(
  client: CloudFrontKeyValueStoreClient,
  arn: string,
  desired: Map<string, string>,
  options: KvsPublishOptions = {},
): Promise<KvsPublishResult> {
  const remove = options.remove ?? new Set<string>();
  for (let attempt = 1; ; attempt++) {
    const { etag, entries, counted } = await readStore(client, arn);
    const plan = planChanges(entries, desired, remove, counted, options.largestTier ?? 'standard');
    const changes: { put?: { Key: string; Value: string }; del?: { Key: string } }[] = [
      ...plan.deletes.map((del) => ({ del })),
      ...plan.puts.map((put) => ({ put })),
    ];
    try {
      let current = etag;
      let countedAfter = counted;
      for (let i = 0; i < changes.length; i += KVS_UPDATE_BATCH) {
        const batch = changes.slice(i, i + KVS_UPDATE_BATCH);
        const out = await client.send(
          new UpdateKeysCommand({
            KvsARN: arn,
            IfMatch: current,
            Puts: batch.flatMap((c) => (c.put ? [c.put] : [])),
            Deletes: batch.flatMap((c) => (c.del ? [c.del] : [])),
          }),
        );
        current = out.ETag!;
        countedAfter = out.TotalSizeInBytes;
      }
      return {
        put: plan.puts.length,
        deleted: plan.deletes.length,
        unchanged: desired.size - plan.puts.length - plan.refused.length,
        removed: plan.deletes.map((d) => d.Key),
        refused: plan.refused,
        unknown: [...entries.keys()].filter((k) => k.startsWith(KEY_ENTRY_PREFIX) && !desired.has(k) && !remove.has(k)),
        size: plan.size,
        counted: countedAfter,
        foreign: foreignBytes(plan.after, (k) => desired.has(k)),
      };
    } catch (err) {
      if (err instanceof ServiceQuotaExceededException) throw storeFull(arn, err);
      if (!(err instanceof ConflictException) || attempt >= ATTEMPTS) throw err;
    }
  }
}

/** What to write to turn `entries` into `desired` less `remove`, new keys left out past the store's
 * room (in the order given: the registry's, oldest first). */
function planChanges(
  entries: ReadonlyMap<string, string>,
  desired: ReadonlyMap<string, string>,
  remove: ReadonlySet<string>,
  counted: number | undefined,
  largestTier: string,
) {
  const deletes = [...remove].filter((key) => entries.has(key)).map((Key) => ({ Key }));
  const changed: { Key: string; Value: string }[] = [];
  const added: { Key: string; Value: string }[] = [];
  for (const [key, value] of desired) {
    const wanted = key.startsWith(KEY_ENTRY_PREFIX) ? keepExhaustion(value, entries.get(key)) : value;
    checkEntrySize(key, wanted);
    if (entries.get(key) === wanted) continue;
    (entries.has(key) || !key.startsWith(KEY_ENTRY_PREFIX) ? changed : added).push({ Key: key, Value: wanted });
  }
  const after = new Map(entries);
  for (const { Key } of deletes) after.delete(Key);
  for (const { Key, Value } of changed) after.set(Key, Value);
  // Bytes the store counts beyond keys and values, spread over its entries (none by this count).
  let own = 0;
  for (const [key, value] of entries) own += entryBytes(key, value);
  const uncounted = counted !== undefined && entries.size > 0 ? Math.max(0, (counted - own) / entries.size) : 0;
  const ledger = new StoreLedger(uncounted, largestTier);
  for (const [key, value] of after) ledger.add(key, value);
  const refused: string[] = [];
  for (const put of added) {
    if (ledger.addWithinLimit(put.Key, put.Value)) {
      changed.push(put);
      after.set(put.Key, put.Value);
    } else refused.push(put.Key);
  }
  return { deletes, puts: changed, refused, after, size: ledger.size() };
}

/** AWS's limits on one entry: an entry beyond them would fail the whole publish at the store. */
function checkEntrySize(key: string, value: string) {
  if (byteLength(key) > KVS_KEY_LIMIT_BYTES || byteLength(value) > KVS_VALUE_LIMIT_BYTES)
    throw new BadInputError(
      `the key store entry ${key} would take ${byteLength(key)} + ${byteLength(value)} bytes, past AWS's limits of ${KVS_KEY_LIMIT_BYTES} for a key and ${KVS_VALUE_LIMIT_BYTES} for a value: shorten its tier's name in the registry and the access config`,
    );
}

function storeFull(arn: string, err: Error): StorageError {
  return new StorageError(
    `UpdateKeys on key store ${arn} was refused as over its quota (${err.name}: ${err.message}); the changes before it were written. The store counts more than publish expected: revoke keys no longer used (they leave ${REVOKED_KEY_EXPIRY_DAYS} days after revocation), delete entries isoatlas did not write, then run keys publish again (docs/OPERATIONS.md, "The key store's size")`,
  );
}

/** A key record as published, with the exhaustion mark the store already holds for it. */
function keepExhaustion(published: string, stored: string | undefined): string {
  const now = stored === undefined ? null : decodeKeyRecord(stored);
  const next = decodeKeyRecord(published)!;
  return now?.exhausted_until ? encodeKeyRecord({ ...next, exhausted_until: now.exhausted_until }) : published;
}

/** The viewer gate's current release as the store holds it now (undefined when none is set). A
 * missing store is also ResourceNotFoundException: callers describe the store first. */
export async function getCurrentRelease(
  client: CloudFrontKeyValueStoreClient,
  arn: string,
): Promise<string | undefined> {
  return client.send(new GetKeyCommand({ KvsARN: arn, Key: CURRENT_RELEASE_ENTRY })).then(
    (r) => r.Value,
    (err: Error) => (err.name === 'ResourceNotFoundException' ? undefined : Promise.reject(err)),
  );
}

/** `isoatlas publish --kvs` and `rollback --kvs`: the viewer gate's current release. Written after
 * the bucket's pointer, so an API request the gate pins to it finds the release there. Says what
 * the store named before (the same release when nothing was written). */
export async function setCurrentRelease(
  client: CloudFrontKeyValueStoreClient,
  arn: string,
  release: string,
): Promise<{ changed: boolean; previous: string | undefined }> {
  for (let attempt = 1; ; attempt++) {
    // The ETag first: a write between the two reads makes the conditional write below fail and retry.
    const described = await client.send(new DescribeKeyValueStoreCommand({ KvsARN: arn }));
    const previous = await getCurrentRelease(client, arn);
    if (previous === release) return { changed: false, previous };
    try {
      await client.send(
        new UpdateKeysCommand({
          KvsARN: arn,
          IfMatch: described.ETag!,
          Puts: [{ Key: CURRENT_RELEASE_ENTRY, Value: release }],
        }),
      );
      return { changed: true, previous };
    } catch (err) {
      if (!(err instanceof ConflictException) || attempt >= ATTEMPTS) throw err;
    }
  }
}
