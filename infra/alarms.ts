// The stack's alarms and the topic they notify: one place that says what is watched, when it fires
// and what to do (docs/OPERATIONS.md, "Alarms", has each in full). Every alarm treats missing data
// as fine: a quiet atlas, or a meter that had nothing to count, is not a failure.
import { CfnOutput, Duration } from 'aws-cdk-lib';
import type * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';

const FIVE_MINUTES = Duration.minutes(5);

/** What the alarms watch; the meter's parts and the store's size exist only with access control. */
export interface AlarmTargets {
  distribution: cloudfront.IDistribution;
  webAcl: wafv2.CfnWebACL;
  /** The web ACL's metric name (its VisibilityConfig), which WAF's metrics carry as `WebACL`. */
  webAclMetricName: string;
  meterFunction?: lambda.IFunction;
  meterFailures?: sqs.IQueue;
  /** The store's size as a metric, and the size at which to warn. */
  keyStoreSize?: { metric: cloudwatch.IMetric; warnAtBytes: number };
  /** Who is told by email when an alarm fires or clears (none: the topic alone, to subscribe later). */
  email?: string;
}

/** The alarms of an atlas, each notifying one SNS topic (output AlarmTopicArn). */
export class AtlasAlarms extends Construct {
  readonly topic: sns.Topic;
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, targets: AlarmTargets) {
    super(scope, id);
    if (targets.email !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(targets.email))
      throw new Error(`the alarm email must be an email address, not "${targets.email}"`);
    this.topic = new sns.Topic(this, 'Topic', { displayName: 'isoatlas alarms', enforceSSL: true });
    if (targets.email) this.topic.addSubscription(new subscriptions.EmailSubscription(targets.email));
    new CfnOutput(scope, 'AlarmTopicArn', {
      value: this.topic.topicArn,
      description: 'the SNS topic every alarm notifies (ISOATLAS_ALARM_EMAIL subscribes an address at deploy)',
    });

    // CloudFront's metrics are in us-east-1 with dimensions DistributionId and Region, always
    // "Global" ("Types of metrics for CloudFront"); CDK's metric5xxErrorRate leaves Region out.
    this.add('Cdn5xx', {
      metric: new cloudwatch.Metric({
        namespace: 'AWS/CloudFront',
        metricName: '5xxErrorRate',
        dimensionsMap: { DistributionId: targets.distribution.distributionId, Region: 'Global' },
        statistic: 'Average',
        period: FIVE_MINUTES,
      }),
      threshold: 1,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      description:
        '1% or more of answers were 5xx for 15 minutes: the origin function or S3 is failing (OPERATIONS: Alarms).',
    });

    // WAF's metrics for a CloudFront web ACL carry WebACL (its metric name) and Rule, and no Region
    // ("AWS WAF metrics and dimensions"); Rule ALL sums every rule.
    const waf = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/WAFV2',
        metricName,
        dimensionsMap: { WebACL: targets.webAclMetricName, Rule: 'ALL' },
        statistic: 'Sum',
        period: FIVE_MINUTES,
      });
    this.add('WafBlocked', {
      metric: new cloudwatch.MathExpression({
        expression: '100 * blocked / (blocked + allowed)',
        usingMetrics: { blocked: waf('BlockedRequests'), allowed: waf('AllowedRequests') },
        label: 'blocked requests, % of all',
        period: FIVE_MINUTES,
      }),
      threshold: 10,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      description:
        'WAF blocked 10% or more of requests for 15 minutes: a flood, or limits set too low (OPERATIONS: Alarms).',
    });

    if (targets.meterFunction)
      this.add('MeterErrors', {
        metric: targets.meterFunction.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        description:
          'The day meter failed in 2 of 3 five-minute periods: day quotas lag while it does (OPERATIONS: Alarms).',
      });
    if (targets.meterFailures)
      this.add('MeterFailureQueue', {
        metric: targets.meterFailures.metricApproximateNumberOfMessagesVisible({
          period: FIVE_MINUTES,
          statistic: 'Maximum',
        }),
        threshold: 1,
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
        description:
          'A log delivery the day meter could not count is waiting in its failure queue: count it again (OPERATIONS: Alarms).',
      });
    if (targets.keyStoreSize)
      this.add('KeyStoreSize', {
        metric: targets.keyStoreSize.metric,
        threshold: targets.keyStoreSize.warnAtBytes,
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
        description:
          'The KeyValueStore is near its size limit: expire revoked keys (keys publish) before it is full (OPERATIONS: Alarms).',
      });
  }

  private add(
    id: string,
    o: {
      metric: cloudwatch.IMetric;
      threshold: number;
      evaluationPeriods: number;
      datapointsToAlarm: number;
      description: string;
    },
  ): void {
    const alarm = new cloudwatch.Alarm(this, id, {
      metric: o.metric,
      threshold: o.threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: o.evaluationPeriods,
      datapointsToAlarm: o.datapointsToAlarm,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: o.description,
    });
    const action = new actions.SnsAction(this.topic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.alarms.push(alarm);
  }
}
