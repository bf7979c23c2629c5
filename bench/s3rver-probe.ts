// Two behaviours of s3rver that decide how `rclone sync` fares against it, checked on the server the
// publish benchmark uses rather than taken on trust, so that section 4 can say what it saw:
//
// 1. Folder-style listing (delimiter "/") names a common prefix only when it finds an object one
//    level below it: its store walks the bucket's directories and stops one level down, so a prefix
//    holding only deeper objects (the tree's api/, all of it under api/v1/) is left out. rclone
//    lists a bucket folder by folder unless told --fast-list, so it misses that prefix.
//    And a listing without a delimiter, page by page, can return a key twice across a page boundary.
// 2. A PUT is answered before the object's bytes are on disk: the store opens the object file,
//    answers once the body has passed its MD5 hash and writes the file on its own time, so a HEAD
//    right after the PUT can see a smaller size (0) than was sent, which is what rclone's HEAD after
//    each upload (left out with --s3-no-head) reports as "corrupted on transfer".
import { HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface ListingProbe {
  /** Top-level entries of the tree ("api/", "manifest.json"), with how many files each holds. */
  expected: { name: string; files: number }[];
  /** What a root listing with delimiter "/" named: common prefixes and keys. */
  listed: string[];
  /** Expected top-level prefixes the delimiter listing left out, each with whether a listing of that
   * prefix without a delimiter (as --fast-list lists) found objects in it. */
  missing: { name: string; files: number; foundWithoutDelimiter: boolean }[];
  /** A whole listing without a delimiter, page by page (as rclone --fast-list reads it): keys
   * returned, distinct keys among them, and the files of the tree. */
  flat: { keys: number; distinct: number; files: number; pages: number; repeatsAtPageStart: number };
}

function countFiles(dir: string): number {
  let n = 0;
  for (const d of readdirSync(dir, { withFileTypes: true })) n += d.isDirectory() ? countFiles(join(dir, d.name)) : 1;
  return n;
}

/** Compares a root listing with delimiter "/" of a bucket holding `tree` (as `rclone sync` left it)
 * with the tree's own top level. */
export async function probeListing(s3: S3Client, bucket: string, tree: string): Promise<ListingProbe> {
  const expected = readdirSync(tree, { withFileTypes: true }).map((d) =>
    d.isDirectory() ? { name: `${d.name}/`, files: countFiles(join(tree, d.name)) } : { name: d.name, files: 1 },
  );
  const listed: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Delimiter: '/', ContinuationToken: token }));
    for (const p of page.CommonPrefixes ?? []) listed.push(p.Prefix!);
    for (const o of page.Contents ?? []) listed.push(o.Key!);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  const missing: ListingProbe['missing'] = [];
  for (const e of expected) {
    if (listed.includes(e.name)) continue;
    const deep = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: e.name, MaxKeys: 1 }));
    missing.push({ ...e, foundWithoutDelimiter: (deep.KeyCount ?? 0) > 0 });
  }
  const keys: string[] = [];
  const seen = new Set<string>();
  let pages = 0;
  let repeatsAtPageStart = 0;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    const pageKeys = (page.Contents ?? []).map((o) => o.Key!);
    // A page whose first keys were already listed: the repeats sit at the page boundary.
    for (const k of pageKeys) {
      if (!seen.has(k)) break;
      repeatsAtPageStart++;
    }
    for (const k of pageKeys) seen.add(k);
    keys.push(...pageKeys);
    pages++;
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  const flat = {
    keys: keys.length,
    distinct: seen.size,
    files: expected.reduce((n, e) => n + e.files, 0),
    pages,
    repeatsAtPageStart,
  };
  return { expected, listed: listed.sort(), missing, flat };
}

export interface PutHeadProbe {
  /** PUTs made (each of a tree file, with `concurrency` in flight), per pass. */
  puts: number;
  concurrency: number;
  passes: {
    pass: 'new keys' | 'same keys rewritten';
    /** Object files on s3rver's disk that, the moment their PUT was answered, held fewer bytes than
     * were sent (the store's file, stat'ed directly: what a HEAD reads). */
    shortFiles: number;
    /** HEADs sent right after their PUT was answered that reported another size than was sent. */
    shortHeads: number;
    /** The sizes those HEADs reported (distinct, ascending). */
    sizesSeen: number[];
    /** For the short ones: ms from the PUT's answer until a HEAD (repeated every ms) saw the full size. */
    msUntilFullMax: number;
  }[];
  /** HEADs of every key once all PUTs were done that still reported another size (0 expected). */
  shortAfterwards: number;
}

function treeFiles(tree: string, limit: number): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (out.length >= limit) return;
      const p = join(dir, d.name);
      if (d.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(tree);
  return out;
}

/** The size of an object's file in s3rver's filesystem store (its "<name>._S3rver_object" file), -1 if absent. */
function fileSize(storeDir: string, bucket: string, key: string): number {
  const parts = key.split('/');
  const name = parts.pop()!;
  try {
    return statSync(join(storeDir, bucket, ...parts, `${name}._S3rver_object`)).size;
  } catch {
    return -1;
  }
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** PUTs `count` files of the tree into `bucket` as rclone uploads them, `concurrency` at a time, each
 * followed at once by a HEAD that compares the size (rclone's check after upload); then PUTs the same
 * keys again (a rewrite in place) and checks again. */
export async function probePutHead(
  s3: S3Client,
  bucket: string,
  tree: string,
  count: number,
  concurrency: number,
  storeDir: string,
): Promise<PutHeadProbe> {
  const files = treeFiles(tree, count).map((path) => ({ key: relative(tree, path), body: readFileSync(path) }));
  const passes: PutHeadProbe['passes'] = [];
  const size = async (key: string) =>
    (await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ContentLength ?? -1;
  for (const pass of ['new keys', 'same keys rewritten'] as const) {
    let shortHeads = 0;
    let shortFiles = 0;
    let msUntilFullMax = 0;
    const sizesSeen = new Set<number>();
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const f = files[next++];
        await s3.send(new PutObjectCommand({ Bucket: bucket, Key: f.key, Body: f.body }));
        const answered = performance.now();
        if (fileSize(storeDir, bucket, f.key) !== f.body.length) shortFiles++;
        const seen = await size(f.key).catch(() => -1);
        if (seen === f.body.length) continue;
        shortHeads++;
        sizesSeen.add(seen);
        // How long until the server has the whole object: HEAD again every millisecond.
        for (let i = 0; i < 5000; i++) {
          await sleep(1);
          if ((await size(f.key).catch(() => -1)) === f.body.length) break;
        }
        msUntilFullMax = Math.max(msUntilFullMax, performance.now() - answered);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    passes.push({ pass, shortFiles, shortHeads, sizesSeen: [...sizesSeen].sort((a, b) => a - b), msUntilFullMax });
  }
  let shortAfterwards = 0;
  for (const f of files) if ((await size(f.key).catch(() => -1)) !== f.body.length) shortAfterwards++;
  return { puts: files.length, concurrency, passes, shortAfterwards };
}
