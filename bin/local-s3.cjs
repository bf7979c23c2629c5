// A local S3-protocol server for trying isoatlas out, and for its tests (test/helpers/s3rver.ts):
// s3rver (a dev dependency), plus what S3 does and s3rver (3.x) does not — conditional writes, which
// publish, rollback and gc require. A PUT with If-Match or If-None-Match is checked against the
// object's ETag and refused with 412 PreconditionFailed as S3 does; conditional PUTs of one key, and
// reads of it, are serialized, so a check and its write are one step and no reader sees a
// half-written object.
//
//   node --openssl-legacy-provider bin/local-s3.cjs <directory> <bucket>[,<bucket>…] [port]
//   (or: npm run local-s3 -- <directory> <bucket> [port])
//
// It prints S3RVER_PORT=<port> once it listens (port 0 or none: any free port). s3rver needs the
// legacy OpenSSL provider for its listing tokens. Any credentials are accepted, but some must be set.
const S3rver = require('s3rver');

const [directory, bucketList, port = '0'] = process.argv.slice(2);
if (!directory || !bucketList || !/^\d+$/.test(port)) {
  console.error('usage: node --openssl-legacy-provider bin/local-s3.cjs <directory> <bucket>[,<bucket>…] [port]');
  process.exit(2);
}
const server = new S3rver({
  address: '127.0.0.1',
  port: Number(port),
  silent: true,
  directory,
  allowMismatchedSignatures: true,
  configureBuckets: bucketList.split(',').map((name) => ({ name, configs: [] })),
});

const locks = new Map();
async function serialized(key, work) {
  const before = locks.get(key) ?? Promise.resolve();
  const mine = before.then(work, work);
  locks.set(
    key,
    mine.catch(() => {}),
  );
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
    const failed = ifNoneMatch
      ? ifNoneMatch === '*' && metadata !== null
      : metadata === null || unquote(metadata.etag) !== unquote(ifMatch);
    if (failed) {
      ctx.status = 412;
      ctx.type = 'application/xml';
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Key>${key}</Key></Error>`;
      return;
    }
    await next();
  });
});

server.run().then((address) => {
  console.log(`S3RVER_PORT=${address.port}`);
  console.error(
    `s3rver with conditional writes on http://127.0.0.1:${address.port}, buckets ${bucketList}, data in ${directory}`,
  );
});
