// The child process of test/helpers/s3rver.ts: s3rver, plus what S3 does and s3rver (3.x) does not —
// conditional writes. A PUT with If-Match or If-None-Match is checked against the object's ETag and
// refused with 412 PreconditionFailed as S3 does; conditional PUTs of one key, and reads of it, are
// serialized, so a check and its write are one step and no reader sees a half-written object.
const S3rver = require('s3rver');

const [directory, bucketsJson] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory,
  allowMismatchedSignatures: true,
  configureBuckets: JSON.parse(bucketsJson).map((name) => ({ name, configs: [] })),
});

const locks = new Map();
async function serialized(key, work) {
  const before = locks.get(key) ?? Promise.resolve();
  const mine = before.then(work, work);
  locks.set(key, mine.catch(() => {}));
  return mine;
}

const unquote = (etag) => String(etag ?? '').replace(/"/g, '');

// First in the chain (Koa composes app.middleware when the server starts listening).
server.middleware.unshift(async (ctx, next) => {
  const ifMatch = ctx.get('if-match');
  const ifNoneMatch = ctx.get('if-none-match');
  const [, bucket, ...rest] = ctx.path.split('/');
  const key = decodeURIComponent(rest.join('/'));
  // s3rver writes an object in place; S3 never shows a reader half of one. Reads of a key wait for
  // the conditional writes of that key (the objects that are rewritten: pointer and history).
  if ((ctx.method === 'GET' || ctx.method === 'HEAD') && key) return serialized(`${bucket}/${key}`, next);
  if (ctx.method !== 'PUT' || (!ifMatch && !ifNoneMatch) || ctx.get('x-amz-copy-source')) return next();
  return serialized(`${bucket}/${key}`, async () => {
    const metadata = await server.store.getMetadata(bucket, key).catch(() => null);
    const failed = ifNoneMatch ? ifNoneMatch === '*' && metadata !== null : metadata === null || unquote(metadata.etag) !== unquote(ifMatch);
    if (failed) {
      ctx.status = 412;
      ctx.type = 'application/xml';
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Key>${key}</Key></Error>`;
      return;
    }
    await next();
  });
});

server.run().then((address) => console.log(`S3RVER_PORT=${address.port}`));
