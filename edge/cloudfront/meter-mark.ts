// The day meter's side of the KeyValueStore: it reads a key's record (its tier, its mark) and asks the
// mark writer (mark-writer.ts, a function of its own and the store's only writer besides the curator)
// to write the exhaustion mark. The meter itself may write nothing to the store.
import type { CloudFrontKeyValueStoreClient } from '@aws-sdk/client-cloudfront-keyvaluestore';
import { tierLimits, type AccessConfig } from '../access/config.js';
import { invokeFunction, type InvokeOptions } from './invoke-function.js';
import { readEntry } from './kvs-entry.js';
import { decodeKeyRecord, keyEntry, type KvsKeyRecord } from './kvs-layout.js';
import type { ExhaustionMark, MarkReport } from './mark-writer.js';

export interface MarkOutcome {
  /** This call wrote the mark. */
  marked: boolean;
  /** The key carries a mark through the day's end (written now or before): nothing left to do. */
  settled: boolean;
}

/** Sends marks to the mark writer and returns its report on each (the deployed meter invokes the
 * writer's function synchronously, so a failed write fails the meter's invocation, which is retried). */
export type WriteMarks = (marks: ExhaustionMark[]) => Promise<MarkReport[]>;

/** WriteMarks by invoking the mark writer's function synchronously (Lambda's Invoke API). */
export function invokeMarkWriter(o: Omit<InvokeOptions, 'payload'>): WriteMarks {
  return async (marks) => (await invokeFunction({ ...o, payload: marks })) as MarkReport[];
}

export interface MarkerOptions {
  kvs: Pick<CloudFrontKeyValueStoreClient, 'send'>;
  kvsArn: string;
  config: AccessConfig;
  writeMarks: WriteMarks;
}

export function createMarker(o: MarkerOptions) {
  async function record(id: string): Promise<KvsKeyRecord | null> {
    const value = await readEntry(o.kvs, o.kvsArn, keyEntry(id));
    return value === null ? null : decodeKeyRecord(value); // no entry: not a published key
  }

  return {
    /** The key's tier as the store has it (for lines that do not name it). */
    async tierOf(id: string): Promise<string | undefined> {
      return (await record(id))?.tier;
    },

    /** Has the key marked used up when `total` reached the day limit of the tier its record names
     * (the store is the authority once it is read). */
    async mark(id: string, total: number, until: number): Promise<MarkOutcome> {
      const r = await record(id);
      const limit = r ? tierLimits(o.config, r.tier).per_day : undefined;
      if (!r || limit === undefined || total < limit) return { marked: false, settled: false };
      if (r.exhausted_until >= until) return { marked: false, settled: true };
      const reports = await o.writeMarks([{ id, exhausted_until: until }]);
      const outcome = Array.isArray(reports) ? reports.find((report) => report.id === id)?.outcome : undefined;
      if (outcome === undefined)
        throw new Error(`the mark writer's answer names no outcome for key ${id}: ${JSON.stringify(reports)}`);
      return { marked: outcome === 'marked', settled: outcome === 'marked' || outcome === 'already-marked' };
    },
  };
}
