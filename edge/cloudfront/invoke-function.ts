// Lambda's Invoke API, synchronous (RequestResponse), over fetch and signed with SigV4 (sigv4.ts):
// how the day meter asks the mark writer to write. As Lambda's "Invoke" API reference has it: POST
// /2015-03-31/functions/<name>/invocations with the payload as JSON; the function's answer comes back
// with 200, a function's error too (200 with X-Amz-Function-Error, the error as the payload); any other
// status is Lambda refusing the call (permissions, throttling, a missing function).
import { signRequest, type AwsCredentials } from './sigv4.js';

export interface InvokeOptions {
  functionName: string;
  payload: unknown;
  region: string;
  credentials: () => Promise<AwsCredentials>;
  /** Lambda's endpoint in `region` unless given (tests). */
  endpoint?: string;
  /** Gives up on an answer after this long (the invocation then fails and is retried). */
  timeoutMs?: number;
  now?: () => Date;
}

const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const DEFAULT_TIMEOUT_MS = 45_000;

/** The function's answer, parsed; throws with the function's own error when it failed. */
export async function invokeFunction(o: InvokeOptions): Promise<unknown> {
  if (!FUNCTION_NAME.test(o.functionName))
    throw new Error(`invoke: "${o.functionName}" is not a function name (1 to 64 letters, digits, - or _)`);
  const url = new URL(
    `/2015-03-31/functions/${o.functionName}/invocations`,
    o.endpoint ?? `https://lambda.${o.region}.amazonaws.com`,
  );
  const body = JSON.stringify(o.payload);
  const headers = signRequest({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', 'x-amz-invocation-type': 'RequestResponse' },
    body,
    region: o.region,
    service: 'lambda',
    credentials: await o.credentials(),
    now: o.now?.() ?? new Date(),
  });
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body,
    signal: AbortSignal.timeout(o.timeoutMs ?? DEFAULT_TIMEOUT_MS),
  });
  const text = await res.text();
  if (res.status !== 200)
    throw new Error(
      `invoke ${o.functionName}: Lambda answered ${res.status} ${res.headers.get('x-amzn-errortype') ?? ''}: ${text.slice(0, 300)}`,
    );
  const answer = text ? JSON.parse(text) : null;
  const failed = res.headers.get('x-amz-function-error');
  if (failed)
    throw new Error(
      `${o.functionName} failed (${failed}): ${answer?.errorType ?? 'Error'}: ${answer?.errorMessage ?? text}`,
    );
  return answer;
}
