/**
 * Opens the bucket behind `--storage s3://…`. The S3 implementation (and the AWS SDK) loads only here, when it is
 * asked for; it implements objectStore.ts, which therefore never imports it.
 */
import type { ObjectStore, S3Location } from './objectStore.js';

export interface ObjectStoreOptions {
  /** Told of every failed bucket attempt that will be tried again (no address in it): the operator's log. */
  onRetry?: (detail: string) => void;
}

export async function openObjectStore(location: S3Location, options: ObjectStoreOptions = {}): Promise<ObjectStore> {
  const { S3ObjectStore } = await import('./s3ObjectStore.js');
  return new S3ObjectStore(location, options.onRetry ? { onRetry: options.onRetry } : {});
}
