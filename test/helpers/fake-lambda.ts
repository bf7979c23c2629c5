// Lambda's Invoke API for tests (synchronous invocations only), in memory over HTTP: a request must be
// signed for Lambda with the test credentials (else 403, as Lambda answers), and runs the named
// handler in process. A handler's answer comes back as the payload; a handler that throws gives 200
// with X-Amz-Function-Error: Unhandled and { errorType, errorMessage }, as Lambda answers.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AwsCredentials } from '../../edge/cloudfront/invoke-function.js';

export const TEST_CREDENTIALS: AwsCredentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'test-session-token',
};

export interface FakeLambda {
  url: string;
  /** Every invocation that reached a handler: function name and payload as received. */
  invocations: { functionName: string; payload: unknown }[];
  close(): Promise<void>;
}

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

export async function startFakeLambda(
  handlers: Record<string, (event: unknown) => Promise<unknown>>,
  region = 'us-east-1',
): Promise<FakeLambda> {
  const invocations: FakeLambda['invocations'] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const answer = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(payload));
    };
    const refuse = (status: number, type: string, message: string) =>
      answer(status, { message }, { 'x-amzn-errortype': type });

    const url = new URL(req.url!, `http://${req.headers.host}`);
    const name = INVOKE_PATH.exec(url.pathname)?.[1];
    const handler = name === undefined ? undefined : handlers[name];
    if (req.method !== 'POST' || !handler)
      return refuse(404, 'ResourceNotFoundException', `no function at ${req.method} ${url.pathname}`);
    // The SDK signs (AWS's own SigV4); what this stand-in checks is that the call was signed for
    // Lambda in the region with the credentials the caller was given.
    const authorization = String(req.headers.authorization ?? '');
    const scope = new RegExp(
      `^AWS4-HMAC-SHA256 Credential=${TEST_CREDENTIALS.accessKeyId}/\\d{8}/${region}/lambda/aws4_request,`,
    );
    if (!scope.test(authorization) || req.headers['x-amz-security-token'] !== TEST_CREDENTIALS.sessionToken)
      return refuse(403, 'InvalidSignatureException', 'the request is not signed for Lambda with the test credentials');
    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch {
      return refuse(400, 'InvalidRequestContentException', 'the request body is not JSON');
    }
    invocations.push({ functionName: name!, payload });
    try {
      answer(200, await handler(payload));
    } catch (err) {
      const e = err as Error;
      answer(200, { errorType: e.name, errorMessage: e.message }, { 'x-amz-function-error': 'Unhandled' });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    invocations,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
