// Every Lambda function of these stacks writes to a log group the stack owns, with a retention, so no
// line is kept forever. Ours name theirs (LoggingConfig). CDK's own providers (the writer and reader
// of cross-region references, made when the bucket lives in another region) are made while CDK
// resolves references, after every constructor and aspect has run: a validation is the first hook
// that sees them, so it is there that each gets a group of its own.
import { CfnResource, RemovalPolicy, type Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';

/** How long CDK's providers' lines (written during deploys only) are kept. */
const PROVIDER_LOG_RETENTION = logs.RetentionDays.ONE_MONTH;
const GROUP_ID = 'Logs';

export function ownProviderLogs(stack: Stack): void {
  stack.node.addValidation({
    validate: () => {
      const providers = stack.node
        .findAll()
        .filter(
          (c): c is CfnResource =>
            CfnResource.isCfnResource(c) &&
            c.cfnResourceType === 'AWS::Lambda::Function' &&
            !(c instanceof lambda.CfnFunction),
        );
      for (const fn of providers) {
        const scope = fn.node.scope!;
        if (scope.node.tryFindChild(GROUP_ID)) continue; // given one by an earlier synthesis of this app
        const group = new logs.LogGroup(scope, GROUP_ID, {
          retention: PROVIDER_LOG_RETENTION,
          removalPolicy: RemovalPolicy.DESTROY,
        });
        fn.addPropertyOverride('LoggingConfig.LogGroup', group.logGroupName);
      }
      return [];
    },
  });
}
