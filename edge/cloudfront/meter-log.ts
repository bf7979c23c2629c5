// What the day meter reads from a CloudWatch Logs subscription delivery: the key gate's lines
// (kvs-layout.ts meterLine), counted per key and UTC day, and the delivery's identity, which makes
// counting it idempotent. Lambda runs the function again on the same event when it failed (and, rarely,
// when it did not), so the same delivery must count once.
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { KEY_ID } from '../access/key-format.js';
import { METER_MARK, METER_TIER } from './kvs-layout.js';

/** A CloudWatch Logs subscription delivery, as Lambda receives it. */
export interface LogsSubscriptionEvent {
  awslogs: { data: string };
}

interface LogsPayload {
  messageType: 'DATA_MESSAGE' | 'CONTROL_MESSAGE';
  logGroup?: string;
  logStream?: string;
  logEvents?: { id: string; timestamp: number; message: string }[];
}

/** One key's requests on one UTC day, in one delivery; the tier when the lines name it. */
export interface DayCount {
  id: string;
  day: string;
  hits: number;
  tier?: string;
}

export interface Delivery {
  /** The same for every replay of this delivery, different for any other. */
  id: string;
  /** Keyed by `<key id>:<day>`. */
  counts: Map<string, DayCount>;
}

export function parseDelivery(event: LogsSubscriptionEvent): Delivery {
  const payload = JSON.parse(gunzipSync(Buffer.from(event.awslogs.data, 'base64')).toString('utf8')) as LogsPayload;
  const counts = new Map<string, DayCount>();
  const events = payload.messageType === 'DATA_MESSAGE' ? (payload.logEvents ?? []) : [];
  for (const e of events) {
    const line = meterLine(e.message);
    if (!line) continue;
    const day = new Date(e.timestamp).toISOString().slice(0, 10);
    const counter = `${line.id}:${day}`;
    const c = counts.get(counter) ?? { id: line.id, day, hits: 0 };
    c.hits++;
    if (line.tier) c.tier = line.tier;
    counts.set(counter, c);
  }
  return {
    id: deliveryId(
      payload,
      events.map((e) => e.id),
    ),
    counts,
  };
}

/** Requests per (key id, UTC day) in one delivery. Lines without the gate's mark are ignored. */
export function countDelivery(event: LogsSubscriptionEvent): Map<string, DayCount> {
  return parseDelivery(event).counts;
}

/** The gate's line in a log message (wherever it sits in it), or null. Lines of an older gate name
 * no tier. */
function meterLine(message: string): { id: string; tier?: string } | null {
  const at = message.indexOf(METER_MARK);
  if (at < 0) return null;
  const [id, ...rest] = message
    .slice(at + METER_MARK.length)
    .trim()
    .split(/\s+/);
  if (!KEY_ID.test(id)) return null;
  const named = rest.find((t) => t.startsWith(METER_TIER.trim()));
  if (!named) return { id };
  try {
    return { id, tier: decodeURIComponent(named.slice(METER_TIER.trim().length)) || undefined };
  } catch {
    return { id }; // a malformed tier: the meter looks it up as for an older gate's line
  }
}

/** CloudWatch Logs names each event by an id; a log stream's events with these ids are this delivery,
 * in whatever order it lists them. */
function deliveryId(payload: LogsPayload, eventIds: string[]): string {
  const identity = JSON.stringify([payload.logGroup ?? '', payload.logStream ?? '', [...eventIds].sort()]);
  return createHash('sha256').update(identity).digest('base64url');
}
