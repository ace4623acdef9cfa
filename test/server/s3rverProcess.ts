/**
 * An S3-compatible bucket (s3rver) in a process of its own, so a test can stop it (SIGSTOP) and resume it
 * (SIGCONT) like a bucket that stops answering: `node --import tsx s3rverProcess.ts <dir> <bucket> [port]`
 * prints `s3rver listening on <port>`.
 */
import S3rver from 's3rver';
import type { AddressInfo } from 'node:net';

const [directory, bucket, port] = process.argv.slice(2);
const s3 = new S3rver({
  port: Number(port ?? 0),
  address: '127.0.0.1',
  silent: true,
  directory: directory!,
  configureBuckets: [{ name: bucket!, configs: [] }],
});
const addr = (await s3.run()) as AddressInfo;
process.stdout.write(`s3rver listening on ${addr.port}\n`);
process.once('SIGTERM', () => void s3.close().then(() => process.exit(0)));
