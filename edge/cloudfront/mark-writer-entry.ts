// The mark writer as deployed: a regular Lambda function in the stack's region, invoked synchronously
// by the day meter only. Its one setting, the store's ARN, is an environment variable the stack sets.
import '@aws-sdk/signature-v4a'; // the KeyValueStore API is signed with SigV4A
import { CloudFrontKeyValueStoreClient } from '@aws-sdk/client-cloudfront-keyvaluestore';
import { createMarkWriter, MARK_WRITER_ENV } from './mark-writer.js';

export const writeMarks = createMarkWriter({
  kvs: new CloudFrontKeyValueStoreClient({ region: 'us-east-1' }),
  kvsArn: process.env[MARK_WRITER_ENV.kvsArn]!,
});
