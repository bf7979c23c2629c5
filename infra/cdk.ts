// AWS CDK is installed in infra/node_modules only (infra/package.json), so Node finds it from
// modules under infra/ and from nowhere else: code outside infra/ (the tests) takes CDK from here.
export { App, Stack } from 'aws-cdk-lib';
export { Template } from 'aws-cdk-lib/assertions';
export * as wafv2 from 'aws-cdk-lib/aws-wafv2';
