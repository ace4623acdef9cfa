/**
 * `--storage` and `--s3-endpoint`, shared by `crisp serve` and `crisp worker`: a directory every process
 * mounts, or `s3://bucket/prefix` (credentials from the AWS SDK's standard chain: AWS_ACCESS_KEY_ID /
 * AWS_SECRET_ACCESS_KEY, a profile or an instance role; region from AWS_REGION).
 */
import path from 'node:path';
import type { Command } from 'commander';
import { parseS3Location, type S3Location } from '../../engine/service/index.js';
import { usageError } from './cliError.js';

export interface StorageFlags {
  storage?: string;
  s3Endpoint?: string;
}

export type StorageChoice = { kind: 'default' } | { kind: 'dir'; dir: string } | { kind: 's3'; location: S3Location };

export function addStorageOptions(command: Command, storageHelp: string): Command {
  return command
    .option('--storage <dir|s3://bucket/prefix>', storageHelp)
    .option(
      '--s3-endpoint <url>',
      'with --storage s3://…: an S3-compatible service (MinIO, Ceph, R2…; default: $CRISP_S3_ENDPOINT, else AWS)',
      process.env.CRISP_S3_ENDPOINT,
    );
}

export function resolveStorage(flags: StorageFlags, db: string | undefined): StorageChoice {
  if (!flags.storage) {
    if (flags.s3Endpoint && !process.env.CRISP_S3_ENDPOINT)
      throw usageError('--s3-endpoint needs --storage s3://bucket/prefix');
    return { kind: 'default' };
  }
  let location: S3Location | undefined;
  try {
    location = parseS3Location(flags.storage, { endpoint: flags.s3Endpoint });
  } catch (e) {
    throw usageError(`--storage ${flags.storage}: ${(e as Error).message}`);
  }
  if (!location) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(flags.storage))
      throw usageError(`--storage ${flags.storage}: only directories and s3://bucket/prefix are supported`);
    return { kind: 'dir', dir: path.resolve(flags.storage) };
  }
  // A bucket is for several processes, which meet in the database (queue, shared signing secret).
  if (!db)
    throw usageError(
      '--storage s3://… needs --db postgres://… (or CRISP_DB_URL): the processes sharing the bucket share the queue there',
    );
  return { kind: 's3', location };
}
