// AWS Signature Version 4 for one kind of request: a path and query of unreserved characters only
// (letters, digits, - . _ ~ and /), which need no URI encoding, so none is done. It lets the day
// meter call Lambda's Invoke API without an SDK client the project does not carry. The steps are
// AWS's ("Create a signed AWS API request", IAM User Guide): canonical request, string to sign,
// signing key derived from the secret, date, region and service; its ListUsers example is the test.
import { createHash, createHmac } from 'node:crypto';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface RequestToSign {
  method: string;
  url: URL;
  /** Headers to send and sign (names in any case); host and x-amz-date are added. */
  headers: Record<string, string>;
  body: string;
  region: string;
  service: string;
  credentials: AwsCredentials;
  now: Date;
}

const PLAIN_PATH = /^[A-Za-z0-9\-._~/]*$/;
const PLAIN_PARAM = /^[A-Za-z0-9\-._~]*$/;
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const hmac = (key: string | Buffer, text: string) => createHmac('sha256', key).update(text, 'utf8').digest();

/** The headers to send (without host, which the HTTP client sets from the URL), Authorization
 * included. */
export function signRequest(r: RequestToSign): Record<string, string> {
  // Sorted by name, then value (code point order: all characters here are ASCII).
  const params = [...r.url.searchParams].sort(([a, x], [b, y]) => (a === b ? cmp(x, y) : cmp(a, b)));
  if (!PLAIN_PATH.test(r.url.pathname) || params.flat().some((p) => !PLAIN_PARAM.test(p)))
    throw new Error(`sigv4: ${r.url.pathname}${r.url.search} has characters this signer does not encode`);
  const amzDate = r.now.toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
  const headers: Record<string, string> = { host: r.url.host, 'x-amz-date': amzDate };
  for (const [name, value] of Object.entries(r.headers)) headers[name.toLowerCase()] = value;
  if (r.credentials.sessionToken) headers['x-amz-security-token'] = r.credentials.sessionToken;
  const names = Object.keys(headers).sort();
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    r.method,
    r.url.pathname || '/',
    params.map(([k, v]) => `${k}=${v}`).join('&'),
    names.map((n) => `${n}:${headers[n].trim().replace(/\s+/g, ' ')}\n`).join(''),
    signedHeaders,
    sha256(r.body),
  ].join('\n');
  const scope = `${amzDate.slice(0, 8)}/${r.region}/${r.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const signingKey = [amzDate.slice(0, 8), r.region, r.service, 'aws4_request'].reduce<string | Buffer>(
    (key, part) => hmac(key, part),
    `AWS4${r.credentials.secretAccessKey}`,
  );
  const signature = hmac(signingKey, stringToSign).toString('hex');
  const { host: _host, ...sent } = headers;
  return {
    ...sent,
    authorization: `AWS4-HMAC-SHA256 Credential=${r.credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
  };
}
