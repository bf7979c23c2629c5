// The bucket that holds published releases: private (public access blocked, ACLs disabled, TLS only,
// encrypted), retained when its stack goes. In us-east-1 it lives in the CDN stack; elsewhere in a
// stack of its own in that region (CloudFormation creates a bucket in its stack's region), whose
// policy admits the distribution through a cross-region reference to it.
import { RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { ownProviderLogs } from './log-groups.js';

export function atlasBucket(scope: Construct, bucketName: string): s3.Bucket {
  return new s3.Bucket(scope, 'AtlasBucket', {
    bucketName,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED, // ACLs disabled: access is policy only
    enforceSSL: true,
    minimumTLSVersion: 1.2,
    encryption: s3.BucketEncryption.S3_MANAGED, // SSE-KMS would need a key policy for CloudFront too
    // Releases are immutable under versioned prefixes and `isoatlas publish` keeps history, so
    // object versioning adds nothing. The bucket outlives the stack: it holds the published data.
    removalPolicy: RemovalPolicy.RETAIN,
  });
}

export interface IsoatlasBucketStackProps extends StackProps {
  bucketName: string;
  /** The distribution that may read it (Origin Access Control): a reference to the CDN stack's. */
  distributionArn: string;
}

/** The atlas bucket in a region other than us-east-1. Deploy the CDN stack first: this one reads the
 * distribution's ARN from it. The origin-request function reads through its own role, which the CDN
 * stack grants by the bucket's name. */
export class IsoatlasBucketStack extends Stack {
  readonly bucket: s3.Bucket;

  constructor(scope: Construct, id: string, props: IsoatlasBucketStackProps) {
    super(scope, id, {
      description: "isoatlas: the bucket of published releases, read by the CDN stack's distribution",
      ...props,
      crossRegionReferences: true,
    });
    ownProviderLogs(this); // CDK's reader of the cross-region reference
    this.bucket = atlasBucket(this, props.bucketName);
    this.bucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowThisDistributionToRead',
        principals: [new iam.ServicePrincipal('cloudfront.amazonaws.com')],
        actions: ['s3:GetObject'],
        resources: [this.bucket.arnForObjects('*')],
        conditions: { StringEquals: { 'AWS:SourceArn': props.distributionArn } },
      }),
    );
  }
}
