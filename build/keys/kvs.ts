// `isoatlas keys publish`: makes the CloudFront KeyValueStore of the CDN deployment hold what the key
// gate needs (edge/cloudfront/kvs-layout.ts). It reads the store, writes only what differs, and
// keeps the meter's exhaustion marks. Writes are conditional on the store's ETag, so a publish racing
// the day meter retries on the newer store instead of undoing the meter's change.
import {
  ConflictException,
  DescribeKeyValueStoreCommand,
  GetKeyCommand,
  ListKeysCommand,
  UpdateKeysCommand,
  type CloudFrontKeyValueStoreClient,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import {
  CURRENT_RELEASE_ENTRY,
  decodeKeyRecord,
  encodeKeyRecord,
  KEY_ENTRY_PREFIX,
} from '../../edge/cloudfront/kvs-layout.js';

/** Changes sent per UpdateKeys call. */
const BATCH = 50;
const ATTEMPTS = 5;

export interface KvsPublishResult {
  put: number;
  deleted: number;
  unchanged: number;
}

export async function readStore(
  client: CloudFrontKeyValueStoreClient,
  arn: string,
): Promise<{ etag: string; entries: Map<string, string> }> {
  const described = await client.send(new DescribeKeyValueStoreCommand({ KvsARN: arn }));
  const entries = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await client.send(new ListKeysCommand({ KvsARN: arn, NextToken: token, MaxResults: 50 }));
    for (const item of page.Items ?? []) entries.set(item.Key!, item.Value!);
    token = page.NextToken;
  } while (token);
  return { etag: described.ETag!, entries };
}

/** Makes the store hold `desired` (and no key record that `desired` lacks). */
export async function publishToStore(
  client: CloudFrontKeyValueStoreClient,
  arn: string,
  desired: Map<string, string>,
): Promise<KvsPublishResult> {
  for (let attempt = 1; ; attempt++) {
    const { etag, entries } = await readStore(client, arn);
    const puts: { Key: string; Value: string }[] = [];
    for (const [key, value] of desired) {
      const wanted = key.startsWith(KEY_ENTRY_PREFIX) ? keepExhaustion(value, entries.get(key)) : value;
      if (entries.get(key) !== wanted) puts.push({ Key: key, Value: wanted });
    }
    // Only key records are ours to remove; anything else in the store was put there by someone else.
    const deletes = [...entries.keys()]
      .filter((key) => key.startsWith(KEY_ENTRY_PREFIX) && !desired.has(key))
      .map((Key) => ({ Key }));
    const changes: { put?: { Key: string; Value: string }; del?: { Key: string } }[] = [
      ...puts.map((put) => ({ put })),
      ...deletes.map((del) => ({ del })),
    ];
    try {
      let current = etag;
      for (let i = 0; i < changes.length; i += BATCH) {
        const batch = changes.slice(i, i + BATCH);
        const out = await client.send(
          new UpdateKeysCommand({
            KvsARN: arn,
            IfMatch: current,
            Puts: batch.flatMap((c) => (c.put ? [c.put] : [])),
            Deletes: batch.flatMap((c) => (c.del ? [c.del] : [])),
          }),
        );
        current = out.ETag!;
      }
      return { put: puts.length, deleted: deletes.length, unchanged: desired.size - puts.length };
    } catch (err) {
      if (!(err instanceof ConflictException) || attempt >= ATTEMPTS) throw err;
    }
  }
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
