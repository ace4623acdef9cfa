import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { convertModelFile } from '../../engine/convert/convert.js';
import { fetchModel, fetchModels, FetchError, type FetchTarget } from '../../engine/convert/install/fetch.js';
import { MODELS_DIR } from '../helpers/paths.js';

/** Serves files from shared/models with Range support; can cut the first response mid-body. */
interface Served {
  url: (rel: string) => string;
  requests: Array<{ path: string; range: string | undefined }>;
  cutNext: boolean;
  close: () => Promise<void>;
}

async function serve(): Promise<Served> {
  const state = { requests: [] as Served['requests'], cutNext: false };
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1);
    state.requests.push({ path: rel, range: req.headers.range });
    let body: Buffer;
    try {
      body = readFileSync(path.join(MODELS_DIR, rel));
    } catch {
      res.writeHead(404).end();
      return;
    }
    let start = 0;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (m) {
      start = Number(m[1]);
      if (start >= body.length) {
        res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
        return;
      }
      res.writeHead(206, {
        'content-length': body.length - start,
        'content-range': `bytes ${start}-${body.length - 1}/${body.length}`,
      });
    } else res.writeHead(200, { 'content-length': body.length });
    if (state.cutNext) {
      state.cutNext = false;
      // Send ~40% of the body, then drop the connection as a flaky network would.
      res.write(body.subarray(start, start + Math.floor((body.length - start) * 0.4)), () =>
        setTimeout(() => res.socket?.destroy(), 20),
      );
      return;
    }
    res.end(body.subarray(start));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (rel) => `http://127.0.0.1:${port}/${rel}`,
    get requests() {
      return state.requests;
    },
    get cutNext() {
      return state.cutNext;
    },
    set cutNext(v: boolean) {
      state.cutNext = v;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const sha = (b: Buffer | Uint8Array): string => createHash('sha256').update(b).digest('hex');
const ANIME_ONNX = readFileSync(path.join(MODELS_DIR, 'onnx', 'realesr-animevideov3.onnx'));
const ANIME_PTH = readFileSync(path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth'));

let srv: Served;
let dir: string;
beforeAll(async () => {
  srv = await serve();
});
afterAll(async () => {
  await srv.close();
});
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-fetch-'));
  srv.requests.length = 0;
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function target(
  rel: string,
  format: FetchTarget['download']['format'],
  sha256: string | null,
  size: number | null,
): FetchTarget {
  return {
    name: 'digital-art-4x',
    file: 'realesr-animevideov3.onnx',
    scale: 4,
    download: { url: srv.url(rel), format, sha256, size },
  };
}

describe('model download (local HTTP server)', () => {
  it('reports progress and installs; a .pth download is converted', async () => {
    const progress: Array<[number, number | null]> = [];
    const installed = await fetchModel(target('pth/realesr-animevideov3.pth', 'pth', sha(ANIME_PTH), null), {
      modelsDir: dir,
      onProgress: (r, t) => progress.push([r, t]),
    });
    expect(installed.scale).toBe(4);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toEqual([ANIME_PTH.length, ANIME_PTH.length]);
    for (let i = 1; i < progress.length; i++) expect(progress[i]![0]).toBeGreaterThanOrEqual(progress[i - 1]![0]);
    const expected = await convertModelFile(path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth'));
    expect(sha(await readFile(installed.path))).toBe(sha(expected.onnx));
    // The .part file is gone once installed.
    expect(await readdir(path.join(dir, '.downloads'))).toEqual([]);
  });

  it('resumes a cut connection with Range and ends byte-identical', async () => {
    srv.cutNext = true;
    const progress: number[] = [];
    const installed = await fetchModel(
      target('onnx/realesr-animevideov3.onnx', 'onnx', sha(ANIME_ONNX), ANIME_ONNX.length),
      {
        modelsDir: dir,
        onProgress: (r) => progress.push(r),
      },
    );
    expect(srv.requests).toHaveLength(2);
    expect(srv.requests[0]!.range).toBeUndefined();
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(srv.requests[1]!.range ?? '')?.[1]);
    expect(resumedAt).toBeGreaterThan(0);
    expect(resumedAt).toBeLessThan(ANIME_ONNX.length);
    expect(Buffer.from(await readFile(installed.path)).equals(ANIME_ONNX)).toBe(true);
    expect(progress.at(-1)).toBe(ANIME_ONNX.length);
  });

  it('a sha256 mismatch deletes the download and installs nothing', async () => {
    const wrong = '0'.repeat(64);
    await expect(
      fetchModel(target('onnx/realesr-animevideov3.onnx', 'onnx', wrong, null), { modelsDir: dir }),
    ).rejects.toThrow(FetchError);
    await expect(
      fetchModel(target('onnx/realesr-animevideov3.onnx', 'onnx', wrong, null), { modelsDir: dir }),
    ).rejects.toThrow(
      /sha256 mismatch for digital-art-4x: expected 0{64}, got 9ff2b047cee46b53a29dac03e9cfb734214ca805510bd7bf2da9368740d308a1; the download was deleted and nothing was installed/,
    );
    const files = await readdir(dir, { recursive: true });
    expect(files.filter((f) => f.endsWith('.onnx') || f.endsWith('.part'))).toEqual([]);
  });

  it('an HTTP error is one clear line', async () => {
    const [r] = await fetchModels([target('onnx/missing.onnx', 'onnx', null, null)], { modelsDir: dir });
    expect(r).toEqual({
      name: 'digital-art-4x',
      ok: false,
      error: expect.stringMatching(/^download from 127\.0\.0\.1:\d+ failed: HTTP 404$/),
    });
  });
});

describe('no network', () => {
  it('fails within seconds with one clear line per model (closed port, unroutable TEST-NET address)', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const targets: FetchTarget[] = [
      {
        name: 'service-lite-4x',
        file: 'a.onnx',
        download: { url: `http://127.0.0.1:${port}/a.pth`, format: 'pth', sha256: null, size: null },
      },
      {
        name: 'clear-boost-4x',
        file: 'b.onnx',
        download: { url: 'http://192.0.2.1/b.pth', format: 'pth', sha256: null, size: null },
      },
      {
        name: 'digital-art-4x',
        file: 'c.onnx',
        download: { url: `http://127.0.0.1:${port}/c.onnx`, format: 'onnx', sha256: null, size: null },
      },
    ];
    const started = Date.now();
    const results = await fetchModels(targets, { modelsDir: dir, connectTimeoutMs: 1500 });
    // A bound on a hang (the OS's own connect timeout is minutes), not a speed test.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(results.map((r) => r.name)).toEqual(['service-lite-4x', 'clear-boost-4x', 'digital-art-4x']);
    for (const r of results) {
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.error).not.toContain('\n');
      expect(r.error).toMatch(/^cannot (reach|resolve) /);
    }
    expect(results[0]).toMatchObject({ error: `cannot reach 127.0.0.1:${port} (connection refused)` });
    expect((await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.onnx'))).toEqual([]);
  });
});
