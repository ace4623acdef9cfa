/**
 * ObjectStore on an S3-compatible bucket through the AWS SDK v3. Credentials come from the SDK's standard
 * chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance role), never from Crisp's flags,
 * so they are neither logged nor stored by Crisp. Loaded only when `--storage s3://…` is used.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { tempPathFor } from './atomicFile.js';
import { ObjectStoreError, s3CodeOf, type CompletedPartRef, type ObjectStore, type S3Location } from './objectStore.js';

export class S3ObjectStore implements ObjectStore {
  readonly description: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(location: S3Location) {
    this.bucket = location.bucket;
    this.prefix = location.prefix;
    this.description = `s3://${location.bucket}/${location.prefix}`;
    this.client = new S3Client({
      // Without a region the SDK refuses to sign; S3-compatible services accept any.
      region: location.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
      ...(location.endpoint ? { endpoint: location.endpoint, forcePathStyle: true } : {}),
      // Checksums only where S3 requires them: since SDK 3.729 streamed PUTs otherwise go out as
      // aws-chunked bodies with trailing CRCs, which several S3-compatible services store verbatim.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private key(rel: string): string {
    return this.prefix + rel;
  }

  async upload(key: string, file: string, contentType?: string): Promise<void> {
    const { size } = await stat(file);
    await this.wrap(
      this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(key),
          Body: createReadStream(file),
          ContentLength: size,
          ...(contentType ? { ContentType: contentType } : {}),
        }),
      ),
    );
  }

  async download(key: string, file: string): Promise<void> {
    const r = await this.wrap(this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key) })));
    await mkdir(path.dirname(file), { recursive: true });
    const tmp = tempPathFor(file);
    try {
      await pipeline(r.Body as Readable, createWriteStream(tmp, { flags: 'wx' }));
      await rename(tmp, file);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    try {
      const r = await this.wrap(this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(key) })));
      return { size: r.ContentLength ?? 0 };
    } catch (e) {
      if (s3CodeOf(e) === 'NotFound' || s3CodeOf(e) === 'NoSuchKey') return undefined;
      throw e;
    }
  }

  async readStart(key: string, length: number): Promise<Uint8Array> {
    const r = await this.wrap(
      this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key), Range: `bytes=0-${length - 1}` }),
      ),
    );
    const bytes = await (r.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray();
    return bytes.subarray(0, length);
  }

  async putJson(key: string, value: unknown): Promise<void> {
    await this.wrap(
      this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(key),
          Body: JSON.stringify(value),
          ContentType: 'application/json',
        }),
      ),
    );
  }

  async getJson<T>(key: string): Promise<T | undefined> {
    try {
      const r = await this.wrap(this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key) })));
      return JSON.parse(await (r.Body as { transformToString(): Promise<string> }).transformToString()) as T;
    } catch (e) {
      if (s3CodeOf(e) === 'NoSuchKey' || s3CodeOf(e) === 'NotFound') return undefined;
      throw e;
    }
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const r = await this.wrap(
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.key(prefix),
            ...(token ? { ContinuationToken: token } : {}),
          }),
        ),
      );
      for (const o of r.Contents ?? []) if (o.Key) keys.push(o.Key.slice(this.prefix.length));
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }

  async removePrefix(prefix: string): Promise<void> {
    const keys = await this.list(prefix);
    // DeleteObjects takes at most 1000 keys per request.
    for (let i = 0; i < keys.length; i += 1000) {
      await this.wrap(
        this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: keys.slice(i, i + 1000).map((k) => ({ Key: this.key(k) })), Quiet: true },
          }),
        ),
      );
    }
  }

  presignGet(key: string, opts: { fileName: string; contentType: string; expiresInSeconds: number }): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.key(key),
      ResponseContentType: opts.contentType,
      ResponseContentDisposition: `attachment; filename="${opts.fileName.replace(/[^\w.-]/g, '_')}"`,
      ResponseCacheControl: 'private, max-age=300',
    });
    return getSignedUrl(this.client, command, { expiresIn: opts.expiresInSeconds });
  }

  async createMultipart(key: string, contentType: string): Promise<string> {
    const r = await this.wrap(
      this.client.send(
        new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.key(key), ContentType: contentType }),
      ),
    );
    if (!r.UploadId)
      throw new ObjectStoreError('NoUploadId', 'the bucket started a multipart upload without an upload id');
    return r.UploadId;
  }

  presignPart(
    key: string,
    uploadId: string,
    partNumber: number,
    length: number,
    expiresInSeconds: number,
  ): Promise<string> {
    const command = new UploadPartCommand({
      Bucket: this.bucket,
      Key: this.key(key),
      UploadId: uploadId,
      PartNumber: partNumber,
      ContentLength: length,
    });
    // content-length among the signed headers: a PUT of another size does not match the signature.
    return getSignedUrl(this.client, command, {
      expiresIn: expiresInSeconds,
      signableHeaders: new Set(['content-length']),
    });
  }

  async completeMultipart(key: string, uploadId: string, parts: CompletedPartRef[]): Promise<void> {
    await this.wrap(
      this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: this.key(key),
          UploadId: uploadId,
          MultipartUpload: { Parts: [...parts].sort((a, b) => a.PartNumber - b.PartNumber) },
        }),
      ),
    );
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    await this.wrap(
      this.client.send(
        new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.key(key), UploadId: uploadId }),
      ),
    );
  }

  async ping(): Promise<void> {
    await this.wrap(this.client.send(new HeadBucketCommand({ Bucket: this.bucket })));
  }

  close(): void {
    this.client.destroy();
  }

  /** Every call goes through here so callers see one error type carrying the bucket's code. */
  private async wrap<T>(call: Promise<T>): Promise<T> {
    try {
      return await call;
    } catch (e) {
      if (e instanceof S3ServiceException)
        throw new ObjectStoreError(e.name, `${this.description}: ${e.name}: ${e.message}`);
      throw e;
    }
  }
}
