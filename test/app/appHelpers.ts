/** Helpers of the app-layer tests: a real `crisp serve` on loopback, a cutting TCP proxy, PSNR, images. */
import { crc32 } from 'node:zlib';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import type { ServerConfig } from '../../engine/server/options.js';

export const LR_DIR = path.join(IMAGES_DIR, 'set5-x4/lr');
export const LR_IMAGES = ['baby', 'bird', 'butterfly', 'head', 'woman'].map((n) =>
  path.join(LR_DIR, `${n}_LRBI_x4.png`),
);
export const BIRD = path.join(LR_DIR, 'bird_LRBI_x4.png');
export const FAST_POLL = { initialMs: 50, maxMs: 200, factor: 1.5, jitter: 0.3 };
export const FAST_RETRY = { initialMs: 50, maxMs: 300, factor: 2, jitter: 0.5 };

export async function startServer(config: Partial<ServerConfig> = {}): Promise<TestServer> {
  return startTestServer({ logLevel: 'warn', ...config });
}

export async function addUser(server: TestServer, email: string, credits: number): Promise<string> {
  const { apiKey } = await server.accounts.addUser({ email, credits, extraCredits: 0 });
  return apiKey;
}

/** PSNR (dB) of two images of equal size, over 8-bit RGB. */
export async function psnr(a: string | Uint8Array, b: string | Uint8Array): Promise<number> {
  const load = (x: string | Uint8Array) =>
    sharp(x).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  const [ra, rb] = await Promise.all([load(a), load(b)]);
  if (ra.info.width !== rb.info.width || ra.info.height !== rb.info.height) throw new Error('sizes differ');
  let se = 0;
  for (let i = 0; i < ra.data.length; i++) se += (ra.data[i]! - rb.data[i]!) ** 2;
  const mse = se / ra.data.length;
  return mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse);
}

/**
 * A valid PNG of `totalBytes` that decodes to a small image: the pixels of `base` plus a private ancillary
 * chunk ("crSp") of random bytes, which decoders skip. Keeps the multipart test's inference cheap.
 */
export async function makeBigPng(base: string, target: string, totalBytes: number): Promise<void> {
  const small = await readFile(base);
  const iendAt = small.length - 12;
  const payload = Buffer.alloc(Math.max(0, totalBytes - small.length - 12));
  for (let i = 0; i + 4 <= payload.length; i += 4) payload.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
  const type = Buffer.from('crSp');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(payload.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([type, payload])) >>> 0);
  await writeFile(target, Buffer.concat([small.subarray(0, iendAt), len, type, payload, crc, small.subarray(iendAt)]));
}

/** Copies the five LR images round-robin into `dir` as `count` distinct files. */
export async function makeBatch(dir: string, count: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const src = LR_IMAGES[i % LR_IMAGES.length]!;
    const p = path.join(dir, `img${String(i + 1).padStart(2, '0')}_${path.basename(src)}`);
    await copyFile(src, p);
    out.push(p);
  }
  return out;
}

export interface CuttingProxy {
  url: string;
  port: number;
  /** Upstream port (set once the server listens). */
  target: number;
  /** Cut the next part PUT once this many bytes of it have passed (once). */
  armCut(afterBytes: number): void;
  cuts: number;
  /** PUT requests to part URLs seen (the re-sent one included). */
  partPuts: number;
  close(): Promise<void>;
}

/** A loopback TCP proxy (node:net) that can drop a connection in the middle of a part upload. */
export async function startCuttingProxy(): Promise<CuttingProxy> {
  const sockets = new Set<net.Socket>();
  let cutAfter: number | undefined;
  const state: CuttingProxy = {
    url: '',
    port: 0,
    target: 0,
    armCut: (n) => (cutAfter = n),
    cuts: 0,
    partPuts: 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(state.target, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    let inPut = false;
    let count = 0;
    const kill = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      const at = text.lastIndexOf('PUT /uploads/');
      if (at >= 0) {
        state.partPuts += text.split('PUT /uploads/').length - 1;
        inPut = true;
        count = chunk.length - at;
      } else if (inPut) {
        count += chunk.length;
      }
      if (inPut && cutAfter !== undefined && count >= cutAfter) {
        cutAfter = undefined;
        state.cuts++;
        kill();
        return;
      }
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on('drain', () => client.resume());
    upstream.pipe(client);
    client.on('error', kill);
    upstream.on('error', kill);
    client.on('close', () => {
      upstream.destroy();
      sockets.delete(client);
    });
    upstream.on('close', () => {
      client.destroy();
      sockets.delete(upstream);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address() as net.AddressInfo;
  state.port = addr.port;
  state.url = `http://127.0.0.1:${addr.port}`;
  return state;
}
