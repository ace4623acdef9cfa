/**
 * `crisp ui`'s HTTP bridge over real HTTP with an in-memory service: the guards (token, Host, CSP),
 * argument validation, raw bytes both ways, Server-Sent Events, and the renderer's HTTP client.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unzipEntries } from '../helpers/unzip.js';
import { startUiServer, type RunningUiServer } from '../../app/ui/bridgeServer.js';
import { createHttpService } from '../../renderer/src/service/httpService.js';
import { NO_API_KEY } from '../../app/service/backendSelection.js';
import { createDownloadSigner, LINK_LIFETIME_MS } from '../../app/ui/downloadLinks.js';
import { createFakeService, PNG_1x1, type FakeService } from '../renderer/fakeService.js';

let server: RunningUiServer;
let fake: FakeService;
let rendererDir: string;

beforeAll(async () => {
  rendererDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-ui-test-'));
  await mkdir(path.join(rendererDir, 'assets'));
  await writeFile(path.join(rendererDir, 'index.html'), '<!doctype html><title>Crisp</title>');
  await writeFile(path.join(rendererDir, 'assets', 'app.js'), 'console.log(1)');
  fake = await createFakeService();
  server = await startUiServer({ service: fake, rendererDir, onDownloaded: (ids) => fake.markDownloaded(ids) });
});
afterAll(async () => {
  await server.close();
  await fake.close();
  await rm(rendererDir, { recursive: true, force: true });
});

const api = (method: string, init: RequestInit = {}, token = server.token) =>
  fetch(`${server.origin}/api/${method}`, {
    method: 'POST',
    ...init,
    headers: { 'content-type': 'application/json', 'x-crisp-token': token, ...(init.headers ?? {}) },
  });

describe('crisp ui bridge', () => {
  it('prints a 127.0.0.1 URL with a long random token', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{40,}$/);
  });

  it('serves the page only with the token, with a strict CSP', async () => {
    expect((await fetch(`${server.origin}/`)).status).toBe(403);
    expect((await fetch(`${server.origin}/?token=wrong`)).status).toBe(403);
    const page = await fetch(server.url);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect((await fetch(`${server.origin}/assets/app.js`)).status).toBe(200);
    expect((await fetch(`${server.origin}/assets/../../etc/passwd`)).status).toBe(404);
    expect((await fetch(`${server.origin}/%2e%2e/%2e%2e/etc/passwd`)).status).toBe(404);
  });

  it('refuses a foreign Host header (DNS rebinding)', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: server.port, path: `/?token=${server.token}`, headers: { host: 'evil.example:80' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(421);
  });

  it('requires the token on every API call and validates arguments', async () => {
    const updates = () => fake.calls.filter((c) => c.method === 'updateSettings').length;
    const updatesBefore = updates();
    expect((await api('getSettings', { body: '{"args":[]}' }, 'nope')).status).toBe(403);
    const ok = await api('getSettings', { body: '{"args":[]}' });
    expect(((await ok.json()) as { result: { model: string } }).result.model).toBe('digital-art-4x');
    const bad = await api('updateSettings', { body: JSON.stringify({ args: [{ scale: 9 }] }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/updateSettings: invalid arguments/);
    expect((await api('constructor', { body: '{"args":[]}' })).status).toBe(404);
    expect((await api('getSettings', { body: '{"args":[]}', headers: { 'content-type': 'text/plain' } })).status).toBe(
      415,
    );
    // None of the refused calls reached the service (other tests may have made valid ones before).
    expect(updates()).toBe(updatesBefore);
  });

  it('passes the service’s own errors through in plain words', async () => {
    await fake.updateSettings({ mode: 'cloud' });
    const res = await api('getAccount', { body: '{"args":[]}' });
    expect(res.status).toBe(422);
    // The words, and the stable code the page words in its own language (renderer/src/i18n/errorText.ts).
    expect(await res.json()).toEqual({ error: NO_API_KEY, code: 'unauthorized' });
    await fake.updateSettings({ mode: 'local' });
  });

  it('round-trips bytes through the renderer’s HTTP client and streams events', async () => {
    const client = createHttpService({ baseUrl: server.origin, token: server.token });
    const events: string[] = [];
    const stream = await fetch(`${server.origin}/api/events?token=${server.token}`);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = stream.body!.getReader();
    const pump = (async () => {
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        for (const line of decoder.decode(value).split('\n'))
          if (line.startsWith('data: ')) events.push((JSON.parse(line.slice(6)) as { type: string }).type);
        if (events.includes('queue')) return;
      }
    })();
    const queued = (await client.getQueue()).items.length;
    const item = await client.addFile('héllo wörld.png', PNG_1x1);
    expect(item.inputName).toBe('héllo wörld.png');
    expect(fake.calls.filter((c) => c.method === 'addFile').at(-1)?.args).toEqual([
      'héllo wörld.png',
      PNG_1x1.byteLength,
    ]);
    const image = await client.readImage(item.id, 'input');
    expect(image.mime).toBe('image/png');
    expect([...image.bytes]).toEqual([...PNG_1x1]);
    await pump;
    await reader.cancel();
    expect(events).toContain('queue');
    await expect(client.readImage('missing', 'input')).rejects.toThrow('That item is no longer in the queue.');
    expect(await client.cancel()).toBeUndefined();
    expect((await client.getQueue()).items).toHaveLength(queued + 1);
  });

  it('downloads finished results through signed links: one file as itself, several as a zip', async () => {
    const client = createHttpService({ baseUrl: server.origin, token: server.token });
    await fake.clearFinished();
    for (const item of fake.items) await fake.removeItem(item.id);
    const added = await fake.addPaths(await fake.images('ünï cödé.png', 'two.png'));
    await expect(client.downloadLink([added[0]!.id])).rejects.toThrow('ünï cödé.png has no result to download yet.');
    await fake.start();
    await fake.finishAll();
    const done = fake.items.filter((i) => i.status === 'done');
    expect(done).toHaveLength(2);

    const one = await fetch(await client.downloadLink([done[0]!.id]));
    expect(one.status).toBe(200);
    const outName = path.basename(done[0]!.outputPath!);
    expect(one.headers.get('content-disposition')).toBe(
      `attachment; filename="${outName.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(outName)}`,
    );
    expect(Buffer.from(await one.arrayBuffer()).equals(await readFile(done[0]!.outputPath!))).toBe(true);
    // A download sent in full marks that result downloaded (Clear finished then needs no confirmation for it).
    await expect.poll(() => fake.items.find((i) => i.id === done[0]!.id)?.downloaded).toBe(true);
    expect(fake.items.find((i) => i.id === done[1]!.id)?.downloaded).toBeUndefined();

    const link = await client.downloadLink(done.map((i) => i.id));
    const zip = await fetch(link);
    expect([zip.status, zip.headers.get('content-type'), zip.headers.get('content-disposition')]).toEqual([
      200,
      'application/zip',
      `attachment; filename="crisp-results.zip"; filename*=UTF-8''crisp-results.zip`,
    ]);
    const entries = await unzipEntries(Buffer.from(await zip.arrayBuffer()));
    expect(Object.keys(entries).sort()).toEqual(done.map((i) => path.basename(i.outputPath!)).sort());
    for (const i of done)
      expect(entries[path.basename(i.outputPath!)]!.equals(await readFile(i.outputPath!))).toBe(true);

    // The signature covers the ids and the expiry: widening either, or a stale link, is refused.
    const tampered = new URL(link);
    tampered.searchParams.set('ids', done[0]!.id);
    expect((await fetch(tampered)).status).toBe(403);
    const later = createDownloadSigner(Buffer.alloc(32, 1));
    const signed = new URLSearchParams(later.sign(['x'], 0).split('?')[1]);
    expect(later.verify(signed, LINK_LIFETIME_MS - 1)).toEqual({ ids: ['x'] });
    expect(later.verify(signed, LINK_LIFETIME_MS + 1)).toEqual({
      refused: 'This download link has expired: press Download again in Crisp.',
    });
    // A result deleted behind Crisp's back is said so, not served half.
    await rm(done[1]!.outputPath!);
    const gone = await fetch(await client.downloadLink([done[1]!.id]));
    expect([gone.status, (await gone.text()).trim()]).toEqual([
      410,
      `The result of ${done[1]!.inputName} is no longer on disk: upscale it again.`,
    ]);
    // Asking for a link needs the page's token.
    const res = await fetch(`${server.origin}/links/download`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ids: [done[0]!.id] }),
    });
    expect(res.status).toBe(403);
  });
});
