// `isoatlas gc` on a store (a bucket, or one given whole): sweep.ts deletes what no release
// references after the grace period; this adds the CDN's pin, read from the KeyValueStore the store
// records (edge-pin.ts), so that gc keeps what the edge may still answer from.
import { openStore, type StoreLocation } from './s3-client.js';
import { readPin, resolvePin, type KvsAccess } from './edge-pin.js';
import { sweepStore, type CollectSummary, type SweepOptions } from './sweep.js';

export type { CollectSummary } from './sweep.js';

export interface CollectOptions extends StoreLocation, Omit<SweepOptions, 'pin'> {
  /** How to reach the KeyValueStore the store records (edge.json); needed when it records one. */
  kvs?: KvsAccess;
}

export function collectGarbage(opts: CollectOptions): Promise<CollectSummary> {
  const store = openStore(opts);
  return sweepStore(store, {
    ...opts,
    pin: async () => {
      const pin = await resolvePin(store, opts.kvs, 'gc');
      return pin ? async () => (await readPin(pin, 'gc deleted nothing')) ?? null : null;
    },
  });
}
