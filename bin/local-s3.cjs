// A local S3-protocol server for trying isoatlas out, and for its tests (test/helpers/s3rver.ts):
// s3rver (a dev dependency), plus what S3 does and s3rver (3.x) does not — conditional writes, which
// publish, rollback and gc require. A PUT with If-Match or If-None-Match is checked against the
// object's ETag and refused with 412 PreconditionFailed as S3 does; conditional PUTs of one key, and
// reads of it, are serialized, so a check and its write are one step and no reader sees a
// half-written object. s3rver (3.x) also answers a PUT before the object's file is written and
// writes the file in place; here an object is written whole to a scratch file and renamed over the
// old one before the PUT is answered, as S3 shows a reader either the old object or the new one.
//
//   node --openssl-legacy-provider bin/local-s3.cjs <directory> <bucket>[,<bucket>…] [port]
//   (or: npm run local-s3 -- <directory> <bucket> [port])
//
// It prints S3RVER_PORT=<port> once it listens (port 0 or none: any free port). s3rver needs the
// legacy OpenSSL provider for its listing tokens. Any credentials are accepted, but some must be set.
const S3rver = require('s3rver');
const fs = require('node:fs');
const crypto = require('node:crypto');
const { pipeline } = require('node:stream/promises');

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

// The object's file written whole, then renamed into place, before its metadata and the answer.
const store = server.store;
store.putObject = async function putObject(object) {
  const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
  await fs.promises.mkdir(require('node:path').dirname(objectPath), { recursive: true });
  const scratch = `${objectPath}.${crypto.randomBytes(6).toString('hex')}.partial`;
  const md5 = crypto.createHash('md5');
  let size = 0;
  const count = async function* (source) {
    for await (const chunk of source) {
      md5.update(chunk);
      size += chunk.length;
      yield chunk;
    }
  };
  const content = Buffer.isBuffer(object.content) ? [object.content] : object.content;
  try {
    await pipeline(content, count, fs.createWriteStream(scratch));
    await fs.promises.rename(scratch, objectPath);
  } catch (err) {
    await fs.promises.rm(scratch, { force: true });
    throw err;
  }
  const digest = md5.digest('hex');
  await this.putMetadata(object.bucket, object.key, object.metadata, digest);
  return { size, md5: digest };
};

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
  // Such a read holds the key until its body is read whole: a write after it must not replace the
  // file under a body still being sent.
  if ((ctx.method === 'GET' || ctx.method === 'HEAD') && key) {
    return serialized(`${bucket}/${key}`, async () => {
      await next();
      const body = ctx.body;
      if (body && typeof body.pipe === 'function') {
        const chunks = [];
        for await (const chunk of body) chunks.push(chunk);
        ctx.body = Buffer.concat(chunks);
      }
    });
  }
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
