// The mark writer: besides the curator's `isoatlas keys publish`, the only writer of the
// KeyValueStore, and all it writes is the exhaustion mark of a key that is already there. The day
// meter reads untrusted text (log lines) and asks it, synchronously, for { id, exhausted_until }
// pairs; a fault or a compromise of the meter can then at worst mark existing keys used up until a
// day ahead. It cannot touch the server secret, the release pin, a key's hash, tier or revocation,
// nor add a key. IAM cannot draw that line by key name (no condition key scopes PutKey to a key:
// "Actions, resources, and condition keys for Amazon CloudFront KeyValueStore"), and the gate reads
// one store only ("Associate a key value store with a function"), so it is drawn by function: this
// code alone holds the store's write permission. After writing it reports the store's size
// (key-store-metrics.ts).
import {
  ConflictException,
  DescribeKeyValueStoreCommand,
  PutKeyCommand,
  type CloudFrontKeyValueStoreClient,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import { KEY_ID } from '../access/key-format.js';
import { keyStoreMetricsLine } from './key-store-metrics.js';
import { readEntry } from './kvs-entry.js';
import { decodeKeyRecord, encodeKeyRecord, keyEntry, type KvsKeyRecord } from './kvs-layout.js';

/** The deployed writer's settings (environment variables the stack sets). */
export const MARK_WRITER_ENV = { kvsArn: 'ISOATLAS_KVS_ARN' } as const;
/** The most marks one request may carry (the meter sends one at a time). */
export const MAX_MARKS = 100;
const DAY_S = 86_400;
/** A mark ends at the next UTC midnight, so at most a day ahead; this much slack either way covers
 * clocks and a request that crosses midnight. */
const SLACK_S = 3_600;
/** Attempts of the conditional write before failing the invocation (the meter's is then retried). */
const MARK_ATTEMPTS = 3;
const BACKOFF_MS = 100;

export interface ExhaustionMark {
  id: string;
  /** Seconds since the epoch. */
  exhausted_until: number;
}

/** marked: written now. already-marked: the key carried a mark at least as long; nothing written.
 * no-such-key: no entry under key:<id>, and none is made. not-a-key-record: the entry is not a key
 * record in the layout's exact form, so it could not be rewritten leaving the rest as it was. */
export type MarkOutcome = 'marked' | 'already-marked' | 'no-such-key' | 'not-a-key-record';

export interface MarkReport {
  id: string;
  outcome: MarkOutcome;
}

/** A request that is not a list of well-formed marks; nothing of it was written. */
export class MarkRequestRefused extends Error {
  override name = 'MarkRequestRefused';
}

const shown = (value: unknown) => (value === undefined ? 'undefined' : JSON.stringify(value).slice(0, 60));
const isoSeconds = (s: number) => new Date(s * 1000).toISOString();
const refused = (what: string) =>
  new MarkRequestRefused(
    `mark writer: refused: ${what}. It takes only a list of { id, exhausted_until } pairs, id a key id, exhausted_until seconds since the epoch; nothing was written`,
  );

/** The marks of a request, or MarkRequestRefused: every mark is checked before any is written. */
export function parseMarkRequest(event: unknown, nowSeconds: number): ExhaustionMark[] {
  // An empty list writes nothing and reports the store's size: the stack's daily call, which keeps
  // the size metric alive on days no key used up its quota.
  if (!Array.isArray(event) || event.length > MAX_MARKS)
    throw refused(`the request ${shown(event)} is not a list of 0 to ${MAX_MARKS} marks`);
  const [earliest, latest] = [nowSeconds - SLACK_S, nowSeconds + DAY_S + SLACK_S];
  return event.map((mark: unknown, i) => {
    if (typeof mark !== 'object' || mark === null || Array.isArray(mark))
      throw refused(`mark ${i} (${shown(mark)}) is not an object`);
    const fields = Object.keys(mark).sort();
    if (fields.join() !== 'exhausted_until,id')
      throw refused(`mark ${i} has the fields ${shown(fields)}, not exactly id and exhausted_until`);
    const { id, exhausted_until: until } = mark as Record<string, unknown>;
    if (typeof id !== 'string' || !KEY_ID.test(id))
      throw refused(`mark ${i}: id ${shown(id)} is not a key id (8 or 9 characters of a-z and 2-7)`);
    if (typeof until !== 'number' || !Number.isSafeInteger(until) || until < earliest || until > latest)
      throw refused(
        `mark ${i}: exhausted_until ${shown(until)} is not a whole number of seconds from ${isoSeconds(earliest)} to ${isoSeconds(latest)}`,
      );
    return { id, exhausted_until: until };
  });
}

/** The key record an entry holds, only when re-encoding it gives back the same bytes: then a record
 * differing in exhausted_until alone leaves every other byte as it was. */
function exactRecord(value: string): KvsKeyRecord | null {
  const record = decodeKeyRecord(value);
  return record && encodeKeyRecord(record) === value ? record : null;
}

export interface MarkWriterOptions {
  kvs: Pick<CloudFrontKeyValueStoreClient, 'send'>;
  kvsArn: string;
  now?: () => number;
  log?: (line: string) => void;
  /** Where the metrics line goes: standard output as it is, since an EMF event must be the bare JSON
   * object (Lambda's console methods prefix their lines). */
  emit?: (line: string) => void;
  /** Waits between attempts of a conditional write. */
  sleep?: (ms: number) => Promise<void>;
}

export function createMarkWriter(o: MarkWriterOptions) {
  const now = o.now ?? Date.now;
  const log = o.log ?? ((line: string) => console.log(line));
  const emit = o.emit ?? ((line: string) => process.stdout.write(`${line}\n`));
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((ok) => setTimeout(ok, ms)));

  /** Writes one mark with a conditional write (the store's ETag), so a concurrent `keys publish` is
   * never overwritten: on a conflict it reads again, a few times, then throws. */
  async function writeMark(mark: ExhaustionMark): Promise<MarkOutcome> {
    const name = keyEntry(mark.id);
    for (let attempt = 1; ; attempt++) {
      const { ETag } = await o.kvs.send(new DescribeKeyValueStoreCommand({ KvsARN: o.kvsArn }));
      const stored = await readEntry(o.kvs, o.kvsArn, name);
      if (stored === null) return 'no-such-key';
      const record = exactRecord(stored);
      if (!record) {
        log(`mark writer: ${name} is not a key record in the store's layout; left as it is`);
        return 'not-a-key-record';
      }
      if (record.exhausted_until >= mark.exhausted_until) return 'already-marked';
      try {
        const Value = encodeKeyRecord({ ...record, exhausted_until: mark.exhausted_until });
        await o.kvs.send(new PutKeyCommand({ KvsARN: o.kvsArn, Key: name, Value, IfMatch: ETag }));
        log(`mark writer: key ${mark.id} marked used up until ${isoSeconds(mark.exhausted_until)}`);
        return 'marked';
      } catch (err) {
        if (!(err instanceof ConflictException) || attempt >= MARK_ATTEMPTS) throw err;
      }
      await sleep(BACKOFF_MS * attempt * (0.5 + Math.random()));
    }
  }

  /** The store's size as metrics; a failure to read it is logged, never fails the marks written. */
  async function reportSize(): Promise<void> {
    try {
      const d = await o.kvs.send(new DescribeKeyValueStoreCommand({ KvsARN: o.kvsArn }));
      if (d.TotalSizeInBytes === undefined || d.ItemCount === undefined)
        throw new Error('DescribeKeyValueStore named no TotalSizeInBytes or ItemCount');
      emit(keyStoreMetricsLine(o.kvsArn, { bytes: d.TotalSizeInBytes, items: d.ItemCount }, now()));
    } catch (err) {
      log(`mark writer: could not read the store's size (no metrics this time): ${(err as Error).message}`);
    }
  }

  return async function writeMarks(event: unknown): Promise<MarkReport[]> {
    const marks = parseMarkRequest(event, Math.floor(now() / 1000));
    const reports: MarkReport[] = [];
    for (const mark of marks) reports.push({ id: mark.id, outcome: await writeMark(mark) });
    await reportSize();
    return reports;
  };
}
