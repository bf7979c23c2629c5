// Keys from a DynamoDB table (the CDN deployment; `isoatlas keys publish` fills it). Each record is
// cached per edge instance for at most REVOCATION_DELAY_MS, so a revocation is seen within that time.
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { REVOCATION_DELAY_MS, type EdgeKeyRecord, type KeyRegistry } from '../key-registry.js';

/** Table layout: partition key `id` (S); `hash` (S), `tier` (S), `revoked_at` (S, absent if live). */
export const KEYS_TABLE_KEY = 'id';

export class DynamoKeyRegistry implements KeyRegistry {
  readonly description: string;
  private readonly cache = new Map<string, { record: EdgeKeyRecord | null; until: number }>();

  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    private readonly maxStaleMs = REVOCATION_DELAY_MS,
  ) {
    this.description = `dynamodb:${table}`;
  }

  async lookup(id: string): Promise<EdgeKeyRecord | null> {
    const cached = this.cache.get(id);
    if (cached && cached.until > Date.now()) return cached.record;
    const out = await this.client.send(new GetItemCommand({ TableName: this.table, Key: { [KEYS_TABLE_KEY]: { S: id } }, ConsistentRead: true }));
    const item = out.Item;
    const record = item?.hash?.S
      ? { id, hash: item.hash.S, tier: item.tier?.S ?? 'standard', revoked_at: item.revoked_at?.S ?? null }
      : null;
    if (this.cache.size > 10_000) this.cache.clear(); // bounded: a flood of random ids cannot grow it
    this.cache.set(id, { record, until: Date.now() + this.maxStaleMs });
    return record;
  }
}
