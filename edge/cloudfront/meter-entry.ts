// The day meter as deployed: a regular Lambda function (in the stack's region, where CloudFront
// Functions write their logs) subscribed to the key gate's log group. Its settings are environment
// variables set by the stack.
import '@aws-sdk/signature-v4a'; // the KeyValueStore API is signed with SigV4A
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CloudFrontKeyValueStoreClient } from '@aws-sdk/client-cloudfront-keyvaluestore';
import { resolveAccessConfig } from '../access/config.js';
import { createMeter, METER_ENV, type LogsSubscriptionEvent } from './meter.js';

const onDelivery = createMeter({
  dynamo: new DynamoDBClient({}),
  table: process.env[METER_ENV.table]!,
  kvs: new CloudFrontKeyValueStoreClient({ region: 'us-east-1' }),
  kvsArn: process.env[METER_ENV.kvsArn]!,
  config: resolveAccessConfig(JSON.parse(process.env[METER_ENV.config] ?? '{}')),
});

export const meter = (event: LogsSubscriptionEvent) => onDelivery(event);
