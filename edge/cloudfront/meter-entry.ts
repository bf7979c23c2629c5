// The day meter as deployed: a regular Lambda function (in the stack's region, where CloudFront
// Functions write their logs) subscribed to the key gate's log group. Its settings are environment
// variables set by the stack. It writes marks by invoking the mark writer synchronously, with its own
// role's credentials, so a write that fails fails this invocation, which Lambda retries.
import '@aws-sdk/signature-v4a'; // the KeyValueStore API is signed with SigV4A
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CloudFrontKeyValueStoreClient } from '@aws-sdk/client-cloudfront-keyvaluestore';
import { resolveAccessConfig } from '../access/config.js';
import { createMeter, METER_ENV, type LogsSubscriptionEvent } from './meter.js';
import { invokeMarkWriter } from './meter-mark.js';

const dynamo = new DynamoDBClient({});

const onDelivery = createMeter({
  dynamo,
  table: process.env[METER_ENV.table]!,
  kvs: new CloudFrontKeyValueStoreClient({ region: 'us-east-1' }),
  kvsArn: process.env[METER_ENV.kvsArn]!,
  config: resolveAccessConfig(JSON.parse(process.env[METER_ENV.config] ?? '{}')),
  writeMarks: invokeMarkWriter({
    functionName: process.env[METER_ENV.markWriter]!,
    region: process.env.AWS_REGION!,
    credentials: () => dynamo.config.credentials(),
  }),
});

export const meter = (event: LogsSubscriptionEvent) => onDelivery(event);
