/**
 * The pieces of the watch folder that decide what is taken: temp names, complete containers (a file cut short
 * is not complete), and the journal's restart rules (done is done; started with its output in place is done;
 * started without an output is upscaled again; a line cut short by a crash is ignored; a renamed file is the
 * version already done, across a restart too).
 */
import { appendFile, readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCandidateName, isCompleteImage, isTempName } from '../../app/watch/arrivals.js';
import { checkWatchFolders } from '../../app/watch/folderWatcher.js';
import { WatchJournal } from '../../app/watch/watchJournal.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';

let dir: string;
beforeAll(async () => {
  dir = await tempDir('crisp-journal-');
});
afterAll(async () => removeDir(dir));

describe('watch folder arrivals', () => {
  it('tells temp names of common apps from images', () => {
    for (const n of ['photo.jpg', 'IMG_0001.JPEG', 'scan 2.png', 'art.webp']) expect(isCandidateName(n), n).toBe(true);
    for (const n of [
      '.photo.jpg.Xy12Ab',
      '._photo.jpg',
      '~$photo.png',
      'photo.png~',
      'photo.jpg.part',
      'photo.part.png',
      'photo.crdownload',
      'photo.tmp.webp',
      'photo.jpg.sb-1a2b3c',
      'notes.txt',
    ])
      expect(isCandidateName(n), n).toBe(false);
    expect(isTempName('photo.png')).toBe(false);
  });

  it('takes a PNG, JPEG or WebP only once its container is closed', async () => {
    const img = sharp({ create: { width: 16, height: 16, channels: 3, background: '#a52' } });
    for (const [ext, bytes] of [
      ['png', await img.clone().png().toBuffer()],
      ['jpg', await img.clone().jpeg().toBuffer()],
      ['webp', await img.clone().webp().toBuffer()],
    ] as const) {
      const file = path.join(dir, `c.${ext}`);
      await writeFile(file, bytes.subarray(0, bytes.length - 3));
      expect(await isCompleteImage(file), `${ext} cut short`).toBe(false);
      await writeFile(file, bytes);
      expect(await isCompleteImage(file), ext).toBe(true);
    }
    await writeFile(path.join(dir, 'x.png'), 'not an image at all');
    expect(await isCompleteImage(path.join(dir, 'x.png'))).toBe(false);
  });

  it('refuses an outputs folder that is the watched folder or holds it', () => {
    expect(() => checkWatchFolders('/w/in', '/w/in')).toThrow(/cannot be the watched folder/);
    expect(() => checkWatchFolders('/w/in', '/w')).toThrow(/is inside the outputs folder/);
    expect(() => checkWatchFolders('/w/in', '/w/in/upscaled')).not.toThrow();
  });
});

describe('watch journal', () => {
  it('restarts without redoing what was done, including an output written just before a crash', async () => {
    const file = path.join(dir, 'journal.jsonl');
    const a = { rel: 'a.png', size: 10, mtimeMs: 1000 };
    const b = { rel: 'sub/b.png', size: 20, mtimeMs: 2000 };
    const c = { rel: 'c.png', size: 30, mtimeMs: 3000 };
    const j = await WatchJournal.open(file);
    await j.start(a, path.join(dir, 'a-out.png'));
    await j.done(a, path.join(dir, 'a-out.png'));
    // b: started, its output renamed into place, then the process died before "done".
    await j.start(b, path.join(dir, 'b-out.png'));
    await writeFile(path.join(dir, 'b-out.png'), 'output');
    // c: started, died before any output.
    await j.start(c, path.join(dir, 'c-out.png'));
    await appendFile(file, '{"event":"done","rel":"c.pn'); // a line cut short

    const again = await WatchJournal.open(file);
    expect(again.state(a)).toBe('done');
    expect(again.state(b)).toBe('done');
    expect(again.state(c)).toBeUndefined();
    // The same name with another size or time is a replaced file: new work.
    expect(again.state({ ...a, size: 11 })).toBeUndefined();
    expect(again.counts()).toEqual({ done: 2, failed: 0 });
    // The recovered "done" is written down, so a third start agrees without looking at outputs.
    expect((await readFile(file, 'utf8')).trim().split('\n').at(-1)).toMatch(/"event":"done","rel":"sub\/b.png"/);

    // An output older than the start is a previous version's: not proof the new one was done.
    await again.start(c, path.join(dir, 'old-out.png'));
    await writeFile(path.join(dir, 'old-out.png'), 'old');
    const past = new Date(Date.now() - 3_600_000);
    await utimes(path.join(dir, 'old-out.png'), past, past);
    expect((await WatchJournal.open(file)).state(c)).toBeUndefined();
  });

  it('knows a renamed or moved file by what it is: done under one name is done under any, across a restart', async () => {
    const file = path.join(dir, 'renames.jsonl');
    const a = { rel: 'a.png', size: 10, mtimeMs: 1000, file: '2049:77' };
    const j = await WatchJournal.open(file);
    await j.start(a, path.join(dir, 'a-out.png'));
    await j.done(a, path.join(dir, 'a-out.png'));
    for (const journal of [j, await WatchJournal.open(file)]) {
      expect(journal.state({ ...a, rel: 'sub/renamed.png' })).toBe('done');
      // Another file (a copy), or the same file changed, is new work.
      expect(journal.state({ ...a, rel: 'copy.png', file: '2049:78' })).toBeUndefined();
      expect(journal.state({ ...a, rel: 'sub/renamed.png', size: 11 })).toBeUndefined();
      // A file system without identities matches by name only.
      expect(journal.state({ rel: 'other.png', size: 10, mtimeMs: 1000 })).toBeUndefined();
      expect(journal.counts()).toEqual({ done: 1, failed: 0 });
    }
  });
});
