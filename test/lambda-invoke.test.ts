// How the day meter calls the mark writer: Lambda's Invoke API through the SDK's Lambda client
// (edge/cloudfront/invoke-function.ts), against a stand-in of the API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invokeFunction } from '../edge/cloudfront/invoke-function.js';
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
    await expect(invoke('echo', {}, { ...TEST_CREDENTIALS, accessKeyId: 'AKIDOTHER' })).rejects.toThrow(
      /invoke echo: Lambda answered 403 InvalidSignatureException/,
    );
    await expect(invoke('missing', {})).rejects.toThrow(
      /invoke missing: Lambda answered 404 ResourceNotFoundException/,
    );
  });

  it('refuses a function name that is not one before sending anything', async () => {
    const before = lambda.invocations.length;
    for (const name of ['', 'a/b', 'arn:aws:lambda:us-east-1:111111111111:function:x', 'x'.repeat(65)])
      await expect(invoke(name, {})).rejects.toThrow(/is not a function name/);
    expect(lambda.invocations.length).toBe(before);
  });
});
