// Lambda's Invoke API, synchronous (RequestResponse), through the AWS SDK's Lambda client: how the day
// meter asks the mark writer to write. A function's error comes back as a successful call carrying
// FunctionError and the error as the payload; it is thrown here with the function's own words.
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { NodeHttpHandler } from '@smithy/node-http-handler';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface InvokeOptions {
  functionName: string;
  payload: unknown;
  region: string;
  credentials: () => Promise<AwsCredentials>;
  /** Lambda's endpoint in `region` unless given (tests). */
  endpoint?: string;
  /** Gives up on an answer after this long (the invocation then fails and is retried). */
  timeoutMs?: number;
}

const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const DEFAULT_TIMEOUT_MS = 45_000;

/** The function's answer, parsed; throws with the function's own error when it failed. */
export async function invokeFunction(o: InvokeOptions): Promise<unknown> {
  if (!FUNCTION_NAME.test(o.functionName))
    throw new Error(`invoke: "${o.functionName}" is not a function name (1 to 64 letters, digits, - or _)`);
  const client = new LambdaClient({
    region: o.region,
    endpoint: o.endpoint,
    credentials: o.credentials,
    // A retry here would only repeat what Lambda's own retry of the meter's invocation repeats.
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ requestTimeout: o.timeoutMs ?? DEFAULT_TIMEOUT_MS }),
  });
  try {
    const out = await client.send(
      new InvokeCommand({
        FunctionName: o.functionName,
        InvocationType: 'RequestResponse',
        Payload: new TextEncoder().encode(JSON.stringify(o.payload)),
      }),
    );
    const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
    const answer = text ? JSON.parse(text) : null;
    if (out.FunctionError)
      throw new Error(
        `${o.functionName} failed (${out.FunctionError}): ${answer?.errorType ?? 'Error'}: ${answer?.errorMessage ?? text}`,
      );
    return answer;
  } catch (err) {
    // Lambda refusing the call (permissions, throttling, a missing function), named as it named it.
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === undefined) throw err;
    throw new Error(
      `invoke ${o.functionName}: Lambda answered ${status} ${(err as Error).name}: ${(err as Error).message}`,
    );
  } finally {
    client.destroy();
  }
}
