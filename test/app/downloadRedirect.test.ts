/**
 * A service with object storage answers its download link with a redirect to a presigned URL of its
 * bucket. The app's client follows it (a bounded number of hops) and sends the API key only to the
 * service's own origin, never to the bucket.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContractClient } from '../../app/remote/contractClient.js';

let api: Server;
let bucket: Server;
let apiOrigin: string;
let bucketOrigin: string;
const seen: { where: string; url: string; headers: IncomingHttpHeaders }[] = [];
const BYTES = Buffer.from('the output bytes');

async function listen(handler: Parameters<typeof createServer>[1]): Promise<[Server, string]> {
  const s = createServer(handler);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return [s, `http://127.0.0.1:${(s.address() as AddressInfo).port}`];
}

beforeAll(async () => {
  [bucket, bucketOrigin] = await listen((req, res) => {
    seen.push({ where: 'bucket', url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(BYTES.length) });
    res.end(BYTES);
  });
  [api, apiOrigin] = await listen((req, res) => {
    seen.push({ where: 'api', url: req.url ?? '', headers: req.headers });
    if (req.url?.startsWith('/downloads/loop')) {
      res.writeHead(302, { location: '/downloads/loop' });
      return res.end();
    }
    res.writeHead(302, { location: `${bucketOrigin}/b/tasks/t/outputs/x.png?X-Amz-Signature=abc` });
    res.end();
  });
});

afterAll(async () => {
  await Promise.all([api, bucket].map((s) => new Promise((r) => s.close(r))));
});

describe('download through a redirect', () => {
  it('follows the redirect to the bucket and sends the key only to the service', async () => {
    seen.length = 0;
    const client = createContractClient({ baseUrl: apiOrigin, apiKey: 'crisp_secret_key' });
    const got = await client.download(`${apiOrigin}/downloads/t/x.png?user=u&signature=s`);
    expect(Buffer.from(got.bytes).toString()).toBe('the output bytes');
    expect(got.contentType).toBe('image/png');
    expect(seen.map((s) => s.where)).toEqual(['api', 'bucket']);
    expect(seen[0]!.headers['x-api-key']).toBe('crisp_secret_key');
    expect(seen[1]!.headers['x-api-key']).toBeUndefined();
    expect(seen[1]!.url).toBe('/b/tasks/t/outputs/x.png?X-Amz-Signature=abc');
  });

  it('stops after a few hops instead of following a loop', async () => {
    seen.length = 0;
    const client = createContractClient({ baseUrl: apiOrigin, apiKey: 'k' });
    await expect(client.download(`${apiOrigin}/downloads/loop`)).rejects.toThrow();
    expect(seen.length).toBe(4);
  });
});
