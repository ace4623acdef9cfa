/**
 * A part URL bounds the part's size by its signature (issue 40: a 50 MiB PUT into the part URL of an 873-byte
 * upload was kept while the quotas counted the declared size). The bucket is s3rver behind sigV4Front.ts, which
 * checks a presigned URL's SigV4 signature as S3 does (s3rver checks none). The upload session is the real
 * S3UploadStore's on the real S3ObjectStore, so the part URLs are the ones get-upload-url hands out.
 */
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import S3rver from 's3rver';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UploadSession } from '../../engine/contract/index.js';
import { S3ObjectStore } from '../../engine/service/storage/s3ObjectStore.js';
import { S3UploadStore } from '../../engine/service/uploads/s3UploadStore.js';
import { httpPut, tempDir } from './helpers.js';
import { startSigV4Front, type SigV4Front } from './sigV4Front.js';

const BUCKET = 'crisp-signed';
/** s3rver's fixed account. */
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const CALLER = { userId: 'u-signed', email: 'signed@example.com' };
const MiB = 2 ** 20;

let root: string;
let s3: S3rver;
let front: SigV4Front;
let objects: S3ObjectStore;
let uploads: S3UploadStore;
let png: Buffer;

beforeAll(async () => {
  root = await tempDir('crisp-s3-signed-');
  await mkdir(path.join(root, 'bucket'));
  s3 = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: path.join(root, 'bucket'),
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const addr = (await s3.run()) as AddressInfo;
  front = await startSigV4Front(`http://127.0.0.1:${addr.port}`, CREDENTIALS);
  // The SDK's standard credential chain, as on a real deployment.
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    AWS_REGION: 'us-east-1',
  });
  objects = new S3ObjectStore({ bucket: BUCKET, prefix: 'p/', endpoint: front.url });
  uploads = new S3UploadStore(objects, { maxFileSize: 100 * MiB, uploadTtlMs: 600_000, fileTtlMs: 600_000 });
  const raw = Buffer.alloc(24 * 20 * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 37 + ((i / 3) | 0) * 11) & 0xff;
  png = await sharp(raw, { raw: { width: 24, height: 20, channels: 3 } })
    .png()
    .toBuffer();
}, 60_000);

afterAll(async () => {
  objects?.close();
  await front?.close();
  await s3?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** Bytes of every file the bucket keeps on disk (objects, and the parts of unfinished uploads). */
async function bucketBytes(): Promise<number> {
  let total = 0;
  for (const name of await readdir(path.join(root, 'bucket'), { recursive: true })) {
    const st = await stat(path.join(root, 'bucket', name));
    if (st.isFile()) total += st.size;
  }
  return total;
}

describe('a presigned part URL signs the part length', () => {
  it('the part URL of a small upload takes the declared length and refuses a 50 MiB PUT with 403, storing none of it', async () => {
    const session: UploadSession = await uploads.create(CALLER, {
      data: { originalFileName: 'small.png', fileType: 'image/png', fileSize: png.length },
    });
    expect(session.partUrls).toHaveLength(1);
    const url = session.partUrls[0]!.signedUrl;
    expect(url.startsWith(`${front.url}/`)).toBe(true);
    expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;host');
    const partPath = new URL(url).pathname;

    const oversized = await httpPut(url, Buffer.alloc(50 * MiB, 0x5a));
    expect(oversized.status).toBe(403);
    expect(oversized.text).toContain('<Code>SignatureDoesNotMatch</Code>');
    expect(front.refused).toEqual([{ method: 'PUT', path: partPath, code: 'SignatureDoesNotMatch' }]);
    // Refused before forwarding: the bucket never saw the PUT, and holds nothing near its size.
    expect(front.forwarded.filter((r) => r.method === 'PUT' && r.path === partPath)).toEqual([]);
    expect(await bucketBytes()).toBeLessThan(MiB);

    // The same URL with the declared length is taken.
    const put = await httpPut(url, png);
    expect(put.status, put.text).toBe(200);
    expect(front.forwarded.filter((r) => r.method === 'PUT' && r.path === partPath)).toEqual([
      { method: 'PUT', path: partPath, bytes: png.length },
    ]);

    // The signature covers the query too: the URL made to name another part is refused, at the right length.
    const otherPart = new URL(url);
    otherPart.searchParams.set('partNumber', '2');
    const moved = await httpPut(otherPart.toString(), png);
    expect(moved.status).toBe(403);
    expect(moved.text).toContain('<Code>SignatureDoesNotMatch</Code>');

    // The upload completes with the declared part; the object is the declared bytes, and the bucket holds
    // nothing of the refused 50 MiB.
    expect(
      await uploads.complete(CALLER, {
        data: {
          uploadId: session.uploadId,
          key: session.path,
          parts: [{ PartNumber: 1, ETag: put.headers.etag as string }],
        },
      }),
    ).toEqual({ status: 'success' });
    expect((await objects.head(session.path))?.size).toBe(png.length);
    expect(await bucketBytes()).toBeLessThan(MiB);
  }, 120_000);
});
