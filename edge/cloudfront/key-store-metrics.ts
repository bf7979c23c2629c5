// The KeyValueStore's size as CloudWatch metrics, named once for the mark writer (which measures it)
// and the stack (which alarms on it). The writer logs one line in CloudWatch's embedded metric format
// (EMF), and CloudWatch Logs turns it into metrics: no cloudwatch:PutMetricData permission, no API call
// on the way. One fixed dimension, the store's ARN, so two stacks in one account never mix their
// stores' figures (and two stacks adopting one store report the same series).
// EMF ("Specification: Embedded metric format"): the log event is one JSON object and nothing else;
// `_aws.Timestamp` in milliseconds; each directive names its namespace, dimension sets and metrics,
// whose values are members of the root object.

export const KEY_STORE_METRICS = {
  namespace: 'isoatlas',
  /** The store's TotalSizeInBytes (DescribeKeyValueStore), which AWS holds to the store's size quota. */
  bytes: 'KeyStoreBytes',
  /** The store's ItemCount: the secret, the release pin and every key entry. */
  items: 'KeyStoreItems',
  /** The only dimension; its value is the store's ARN. */
  dimension: 'KeyValueStore',
} as const;

export interface KeyStoreSize {
  bytes: number;
  items: number;
}

/** One EMF log line carrying the store's size at `timestampMs`. */
export function keyStoreMetricsLine(storeArn: string, size: KeyStoreSize, timestampMs: number): string {
  const m = KEY_STORE_METRICS;
  return JSON.stringify({
    _aws: {
      Timestamp: timestampMs,
      CloudWatchMetrics: [
        {
          Namespace: m.namespace,
          Dimensions: [[m.dimension]],
          Metrics: [
            { Name: m.bytes, Unit: 'Bytes' },
            { Name: m.items, Unit: 'Count' },
          ],
        },
      ],
    },
    [m.dimension]: storeArn,
    [m.bytes]: size.bytes,
    [m.items]: size.items,
  });
}
