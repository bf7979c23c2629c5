// Shared counters for the CDN deployment, where edge functions in many locations must agree: one
// DynamoDB item per counter, incremented with a conditional UpdateItem (atomic: admitted only while
// below the limit) and removed by DynamoDB's TTL after the window ends.
import { ConditionalCheckFailedException, DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { HitResult, QuotaStore } from '../quota-store.js';

/** Table layout: partition key `counter` (S); numeric `hits`; TTL attribute `expires_at` (epoch s). */
export const QUOTA_TABLE_KEY = 'counter';
export const QUOTA_TTL_ATTRIBUTE = 'expires_at';

export class DynamoQuotaStore implements QuotaStore {
  readonly description: string;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    private readonly timeoutMs = 250,
  ) {
    this.description = `dynamodb:${table}`;
  }

  async hit(counter: string, limit: number, expiresAt: number): Promise<HitResult> {
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { [QUOTA_TABLE_KEY]: { S: counter } },
          UpdateExpression: 'ADD hits :one SET #ttl = if_not_exists(#ttl, :ttl)',
          ConditionExpression: 'attribute_not_exists(hits) OR hits < :limit',
          ExpressionAttributeNames: { '#ttl': QUOTA_TTL_ATTRIBUTE },
          ExpressionAttributeValues: {
            ':one': { N: '1' },
            ':limit': { N: String(limit) },
            // Kept a day past the window so a late clock never resurrects a window early.
            ':ttl': { N: String(Math.ceil(expiresAt / 1000) + 86_400) },
          },
          ReturnValues: 'UPDATED_NEW',
        }),
        { abortSignal: AbortSignal.timeout(this.timeoutMs) },
      );
      return { admitted: true, count: Number(out.Attributes?.hits?.N ?? 1) };
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException || (err as Error).name === 'ConditionalCheckFailedException') {
        return { admitted: false, count: limit };
      }
      throw err;
    }
  }

  async undo(counter: string): Promise<void> {
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { [QUOTA_TABLE_KEY]: { S: counter } },
        UpdateExpression: 'ADD hits :minus',
        ConditionExpression: 'hits > :zero',
        ExpressionAttributeValues: { ':minus': { N: '-1' }, ':zero': { N: '0' } },
      }),
      { abortSignal: AbortSignal.timeout(this.timeoutMs) },
    ).catch(() => {}); // best effort: a lost undo only makes a window slightly stricter
  }
}
