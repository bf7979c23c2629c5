// One entry of the KeyValueStore as stored, read by the day meter (a key's tier) and the mark writer
// (the record it rewrites).
import {
  GetKeyCommand,
  ResourceNotFoundException,
  type CloudFrontKeyValueStoreClient,
} from '@aws-sdk/client-cloudfront-keyvaluestore';

/** The entry's value as the store holds it, or null when there is no such entry. */
export async function readEntry(
  kvs: Pick<CloudFrontKeyValueStoreClient, 'send'>,
  kvsArn: string,
  name: string,
): Promise<string | null> {
  try {
    const { Value } = await kvs.send(new GetKeyCommand({ KvsARN: kvsArn, Key: name }));
    return Value ?? null;
  } catch (err) {
    if (err instanceof ResourceNotFoundException) return null;
    throw err;
  }
}
