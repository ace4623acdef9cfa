/**
 * Opens the bucket behind `--storage s3://…`. The S3 implementation (and the AWS SDK) loads only here, when it is
 * asked for; it implements objectStore.ts, which therefore never imports it.
 */
import type { ObjectStore, S3Location } from './objectStore.js';

export async function openObjectStore(location: S3Location): Promise<ObjectStore> {
  const { S3ObjectStore } = await import('./s3ObjectStore.js');
  return new S3ObjectStore(location);
}
