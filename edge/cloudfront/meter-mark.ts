// The day meter's side of the KeyValueStore: a key's record, and the exhaustion mark written into it
// with a conditional write (the store's ETag), so a concurrent `isoatlas keys publish` is never
// overwritten.
import {
  ConflictException,
  DescribeKeyValueStoreCommand,
  GetKeyCommand,
  PutKeyCommand,
  ResourceNotFoundException,
  type CloudFrontKeyValueStoreClient,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import { tierLimits, type AccessConfig } from '../access/config.js';
import { decodeKeyRecord, encodeKeyRecord, keyEntry, type KvsKeyRecord } from './kvs-layout.js';

/** Attempts of the conditional write before giving up on this invocation. */
const MARK_ATTEMPTS = 3;
const BACKOFF_MS = 100;

export interface MarkOutcome {
  /** This call wrote the mark. */
  marked: boolean;
  /** The key carries a mark through the day's end (written now or before): nothing left to do. */
  settled: boolean;
}

export interface MarkerOptions {
  kvs: Pick<CloudFrontKeyValueStoreClient, 'send'>;
  kvsArn: string;
  config: AccessConfig;
  sleep?: (ms: number) => Promise<void>;
}

export function createMarker(o: MarkerOptions) {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((ok) => setTimeout(ok, ms)));

  async function record(id: string): Promise<KvsKeyRecord | null> {
    try {
      const { Value } = await o.kvs.send(new GetKeyCommand({ KvsARN: o.kvsArn, Key: keyEntry(id) }));
      return Value === undefined ? null : decodeKeyRecord(Value);
    } catch (err) {
      if (err instanceof ResourceNotFoundException) return null; // not a published key
      throw err;
    }
  }

  return {
    /** The key's tier as the store has it (for lines that do not name it). */
    async tierOf(id: string): Promise<string | undefined> {
      return (await record(id))?.tier;
    },

    /** Sets the key's exhaustion mark when `total` reached the day limit of the tier its record names
     * (the store is the authority once it is read). On a conflict (the store changed between read
     * and write) it reads again, a few times; then it throws, failing the invocation: Lambda retries
     * the delivery later, and counting is idempotent, so the replay only re-checks. */
    async mark(id: string, total: number, until: number): Promise<MarkOutcome> {
      for (let attempt = 1; ; attempt++) {
        const { ETag } = await o.kvs.send(new DescribeKeyValueStoreCommand({ KvsARN: o.kvsArn }));
        const r = await record(id);
        const limit = r ? tierLimits(o.config, r.tier).per_day : undefined;
        if (!r || limit === undefined || total < limit) return { marked: false, settled: false };
        if (r.exhausted_until >= until) return { marked: false, settled: true };
        try {
          await o.kvs.send(
            new PutKeyCommand({
              KvsARN: o.kvsArn,
              Key: keyEntry(id),
              Value: encodeKeyRecord({ ...r, exhausted_until: until }),
              IfMatch: ETag,
            }),
          );
          return { marked: true, settled: true };
        } catch (err) {
          if (!(err instanceof ConflictException) || attempt >= MARK_ATTEMPTS) throw err;
        }
        await sleep(BACKOFF_MS * attempt * (0.5 + Math.random()));
      }
    },
  };
}
