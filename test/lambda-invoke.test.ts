// How the day meter calls the mark writer: Lambda's Invoke API over fetch (edge/cloudfront/
// invoke-function.ts), signed with SigV4 (edge/cloudfront/sigv4.ts). The signer against AWS's own
// worked example; the call against a stand-in of the API that checks each signature.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invokeFunction } from '../edge/cloudfront/invoke-function.js';
import { signRequest } from '../edge/cloudfront/sigv4.js';
import { startFakeLambda, TEST_CREDENTIALS, type FakeLambda } from './helpers/fake-lambda.js';

let lambda: FakeLambda;
beforeAll(async () => {
  lambda = await startFakeLambda({
    echo: async (event) => ({ got: event }),
    fails: async () => {
      throw new RangeError('nothing to do');
    },
  });
});
afterAll(() => lambda.close());

const invoke = (functionName: string, payload: unknown, credentials = TEST_CREDENTIALS) =>
  invokeFunction({
    functionName,
    payload,
    region: 'us-east-1',
    credentials: async () => credentials,
    endpoint: lambda.url,
  });

describe('SigV4', () => {
  it('signs AWS\'s worked example (IAM ListUsers, "Create a signed AWS API request") to its published signature', () => {
    const headers = signRequest({
      method: 'GET',
      url: new URL('https://iam.amazonaws.com/?Version=2010-05-08&Action=ListUsers'),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: '',
      region: 'us-east-1',
      service: 'iam',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
      now: new Date('2015-08-30T12:36:00Z'),
    });
    expect(headers).toEqual({
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      'x-amz-date': '20150830T123600Z',
      authorization:
        'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7',
    });
  });

  it('refuses a path or query it would have to encode, rather than sign it wrongly', () => {
    const sign = (url: string) => () =>
      signRequest({
        method: 'GET',
        url: new URL(url),
        headers: {},
        body: '',
        region: 'us-east-1',
        service: 'lambda',
        credentials: TEST_CREDENTIALS,
        now: new Date(),
      });
    expect(sign('https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/a:b/invocations')).toThrow(
      /does not encode/,
    );
    expect(sign('https://lambda.us-east-1.amazonaws.com/x?q=a/b')).toThrow(/does not encode/);
  });
});

describe("Lambda's Invoke API", () => {
  it("sends the payload signed and returns the function's answer", async () => {
    const before = lambda.invocations.length;
    expect(await invoke('echo', [{ id: 'abcdefgh', exhausted_until: 1 }])).toEqual({
      got: [{ id: 'abcdefgh', exhausted_until: 1 }],
    });
    expect(lambda.invocations.slice(before)).toEqual([
      { functionName: 'echo', payload: [{ id: 'abcdefgh', exhausted_until: 1 }] },
    ]);
  });

  it("throws the function's own error, and Lambda's refusal (signature, missing function) with its type", async () => {
    await expect(invoke('fails', {})).rejects.toThrow('fails failed (Unhandled): RangeError: nothing to do');
    await expect(invoke('echo', {}, { ...TEST_CREDENTIALS, secretAccessKey: 'not-the-key' })).rejects.toThrow(
      /echo: Lambda answered 403 InvalidSignatureException/,
    );
    await expect(invoke('missing', {})).rejects.toThrow(/missing: Lambda answered 404 ResourceNotFoundException/);
  });

  it('refuses a function name that is not one before sending anything', async () => {
    const before = lambda.invocations.length;
    for (const name of ['', 'a/b', 'arn:aws:lambda:us-east-1:111111111111:function:x', 'x'.repeat(65)])
      await expect(invoke(name, {})).rejects.toThrow(/is not a function name/);
    expect(lambda.invocations.length).toBe(before);
  });
});
