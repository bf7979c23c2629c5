// The CDN's pin on a store's release: the viewer gate answers API requests from the release its
// KeyValueStore names (`release:current`), whatever current.json says. Only `publish` and `rollback`
// move it, so a deployment with a KeyValueStore must never run them without it, nor gc without
// knowing what it pins. The store itself remembers which KeyValueStore that is (edge.json, written by
// the first command given `--kvs`), so later commands find it without being told, refuse a different
// one unless it is replaced deliberately, and check they can reach it before changing anything.
// Stores without a record (mirrors' buckets, local try-outs) have no pin and work as before.
import type { CloudFrontKeyValueStoreClient } from '@aws-sdk/client-cloudfront-keyvaluestore';
import { DescribeKeyValueStoreCommand } from '@aws-sdk/client-cloudfront-keyvaluestore';
import { EDGE_KEY, STORE_FORMAT } from '../../edge/contract/store-layout.js';
import { getCurrentRelease, setCurrentRelease } from '../keys/kvs.js';
import { UsageError } from '../common/errors.js';
import { StorageError } from '../common/storage-errors.js';
import type { ReleaseStore } from '../../edge/store/release-store.js';

/** How a command reaches the CDN's KeyValueStore, from its options. */
export interface KvsAccess {
  client: CloudFrontKeyValueStoreClient;
  /** `--kvs`: the store to pin in; without it, the one the store records (if any). */
  arn?: string;
  /** `--replace-kvs`: the recorded KeyValueStore that `arn` deliberately takes the place of. */
  replaces?: string;
  /** `--kvs-endpoint`, for messages; AWS's own endpoint when absent. */
  endpoint?: string;
}

export interface EdgePin {
  client: CloudFrontKeyValueStoreClient;
  arn: string;
  endpoint: string;
  /** False when edge.json must still be written (the first `--kvs`, or a replacement). */
  recorded: boolean;
}

const AWS_ENDPOINT = 'the CloudFront KeyValueStore API of AWS';

/** The KeyValueStore that pins this store's release, checked reachable (DescribeKeyValueStore), or
 * null for a store without one. Nothing is written: a refusal here leaves the store as it was. */
export async function resolvePin(
  store: ReleaseStore,
  access: KvsAccess | undefined,
  command: string,
): Promise<EdgePin | null> {
  const recorded = (await store.edge())?.kvs;
  const record = store.where + EDGE_KEY;
  if (access?.replaces && access.replaces !== recorded) {
    throw new UsageError(
      `--replace-kvs ${access.replaces}, but ${record} records ${recorded ?? 'no KeyValueStore'}: name the KeyValueStore it records (see \`isoatlas releases\`)`,
    );
  }
  if (access?.replaces && !access.arn)
    throw new UsageError('--replace-kvs needs --kvs <the KeyValueStore to use from now on>');
  if (recorded && access?.arn && access.arn !== recorded && access.replaces !== recorded) {
    throw new UsageError(
      `--kvs ${access.arn}, but ${record} records ${recorded} as the CDN's KeyValueStore that pins this store's release. ` +
        `Leave out --kvs to use the recorded one; to move this store to another KeyValueStore on purpose (a new stack), add --replace-kvs ${recorded}`,
    );
  }
  const arn = access?.arn ?? recorded;
  if (!arn) return null;
  if (!access) {
    throw new UsageError(
      `${record} records the CDN's KeyValueStore ${arn}, which pins the release viewers get: ${command} needs to reach it (pass a KeyValueStore client)`,
    );
  }
  const pin: EdgePin = {
    client: access.client,
    arn,
    endpoint: access.endpoint ?? AWS_ENDPOINT,
    recorded: arn === recorded,
  };
  await reach(pin, 'DescribeKeyValueStore', `${command} changed nothing`, () =>
    pin.client.send(new DescribeKeyValueStoreCommand({ KvsARN: arn })),
  );
  return pin;
}

/** Writes edge.json when the pin is new to the store, conditionally: of two first publishes naming
 * different KeyValueStores, the second finds the first's record and is refused. */
export async function recordPin(
  store: ReleaseStore,
  pin: EdgePin,
  replaces: string | undefined,
  log: (line: string) => void,
): Promise<void> {
  if (pin.recorded) return;
  await store.updateEdge((now) => {
    if (now?.kvs === pin.arn) return null;
    if (now && now.kvs !== replaces)
      throw new UsageError(
        `${store.where}${EDGE_KEY} was just set to ${now.kvs} by another command; run again (with --replace-kvs ${now.kvs} to replace it)`,
      );
    return { format: STORE_FORMAT, kvs: pin.arn, recorded_at: new Date().toISOString() };
  });
  pin.recorded = true;
  log(
    `${store.where}${EDGE_KEY} → ${pin.arn}: publish, rollback and gc of this store use this KeyValueStore from now on, --kvs or not`,
  );
}

/** Names `release` in the KeyValueStore, then notes in the history until when the release it
 * replaced was pinned, so gc keeps that one's objects for a grace period after. */
export async function movePin(
  store: ReleaseStore,
  pin: EdgePin,
  release: string,
  pointerNote: string,
  log: (line: string) => void,
): Promise<boolean> {
  const { changed, previous } = await reach(pin, 'UpdateKeys', pointerNote, () =>
    setCurrentRelease(pin.client, pin.arn, release),
  );
  log(`${pin.arn} release:current → ${release}`);
  if (changed && previous !== undefined && previous !== release) {
    const unpinnedAt = new Date().toISOString();
    await store.updateHistory((h) => ({
      ...h,
      unpinned: [
        ...(h.unpinned ?? []).filter((u) => u.release !== previous && u.release !== release),
        { release: previous, unpinned_at: unpinnedAt },
      ],
    }));
  }
  return changed;
}

/** The release the KeyValueStore pins now (undefined when it names none). */
export async function readPin(pin: EdgePin, consequence: string): Promise<string | undefined> {
  return reach(pin, 'GetKey', consequence, () => getCurrentRelease(pin.client, pin.arn));
}

/** Runs a KeyValueStore request; a failure becomes a StorageError (exit 4) naming the store, the
 * endpoint, what it means for the command and what to do. */
async function reach<T>(pin: EdgePin, operation: string, consequence: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    const e = err as Error & { code?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    const code = e.code ?? (e.cause as { code?: string } | undefined)?.code;
    let advice = 'try again, or check the KeyValueStore in the CloudFront console';
    if (e.name === 'CredentialsProviderError' || /credentials/i.test(e.message ?? ''))
      advice =
        'set AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE); the KeyValueStore API is signed with SigV4A';
    else if (e.name === 'AccessDeniedException' || status === 403)
      advice =
        'the credentials in use need cloudfront-keyvaluestore:DescribeKeyValueStore, GetKey and UpdateKeys on it';
    else if (e.name === 'ResourceNotFoundException' || status === 404)
      advice = `check the ARN (the stack's KeyValueStoreArn output); if the stack was replaced, move the store to its new KeyValueStore with --kvs <new> --replace-kvs ${pin.arn}`;
    else if (
      typeof code === 'string' &&
      /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH)$/.test(code)
    )
      advice = `cannot reach the endpoint (${code}): check the network and --kvs-endpoint`;
    throw new StorageError(
      `${operation} on the CDN's KeyValueStore ${pin.arn} at ${pin.endpoint} failed: ${e.name}${status ? ` (HTTP ${status})` : ''}: ${e.message}. ${consequence}. To fix: ${advice}`,
    );
  }
}
