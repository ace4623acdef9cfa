/**
 * Which files in a watched folder are images ready to upscale: an image name (not a temp name of a common app),
 * outside the outputs folder, and complete — its size unchanged since the last look and its container closed
 * (PNG's IEND, JPEG's EOI, WebP's RIFF size), so a file still being written, even one whose writer paused, is
 * never taken half-written.
 */
import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';

const IMAGE_EXT = /\.(jpe?g|png|webp)$/i;

/**
 * Names that apps give files while they are written: hidden files (rsync's `.name.XXXXXX`, macOS `._name`),
 * Office's `~$`, editors' `~` backups, and download / copy suffixes (also before the image extension, as in
 * `photo.part.png`), Photoshop's `…PS1234.tmp`. None ends in an image extension except the in-between ones.
 */
const TEMP_NAME = [
  /^\./,
  /^~\$/,
  /~$/,
  /\.(tmp|temp|part|partial|crdownload|download|opdownload|filepart|swp|!ut|sb-[\w-]+)(\.|$)/i,
];

export function isTempName(name: string): boolean {
  return TEMP_NAME.some((r) => r.test(name));
}

export function isCandidateName(name: string): boolean {
  return IMAGE_EXT.test(name) && !isTempName(name);
}

/** Whether the image's container is closed: a file cut short (still being written) is not. */
export async function isCompleteImage(file: string): Promise<boolean> {
  let fh;
  try {
    fh = await open(file, 'r');
    const { size } = await fh.stat();
    if (size < 16) return false;
    const head = Buffer.alloc(12);
    const tail = Buffer.alloc(Math.min(size, 64));
    await fh.read(head, 0, 12, 0);
    await fh.read(tail, 0, tail.length, size - tail.length);
    if (head.readUInt32BE(0) === 0x89504e47) return tail.subarray(-8, -4).toString('latin1') === 'IEND';
    if (head[0] === 0xff && head[1] === 0xd8) {
      // EOI, possibly followed by padding some cameras and editors leave after it.
      const t = tail.toString('latin1').replace(/[\0\s]+$/, '');
      return t.endsWith('\xff\xd9');
    }
    if (head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP')
      return head.readUInt32LE(4) + 8 <= size;
    return false;
  } catch {
    return false;
  } finally {
    await fh?.close();
  }
}

export interface SeenFile {
  /** Absolute path. */
  path: string;
  size: number;
  mtimeMs: number;
  /** `device:inode`, the same under any name (absent where the file system numbers no files). */
  file?: string;
}

/** The identity of a file as stat gives it: a rename keeps it. */
export const fileIdentity = (st: { dev: number; ino: number }): string | undefined =>
  st.ino ? `${st.dev}:${st.ino}` : undefined;

/** Image files under `dir` (sub-folders with `recursive`), leaving out `exclude` folders and hidden folders. */
export async function listCandidates(dir: string, recursive: boolean, exclude: string[]): Promise<SeenFile[]> {
  const out: SeenFile[] = [];
  const skip = new Set(exclude.map((d) => path.resolve(d)));
  const walk = async (d: string, depth: number): Promise<void> => {
    if (skip.has(d)) return;
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (recursive && depth < 32 && !e.name.startsWith('.')) await walk(p, depth + 1);
      } else if (e.isFile() && isCandidateName(e.name)) {
        const st = await stat(p).catch(() => undefined);
        const file = st && fileIdentity(st);
        if (st) out.push({ path: p, size: st.size, mtimeMs: st.mtimeMs, ...(file ? { file } : {}) });
      }
    }
  };
  await walk(path.resolve(dir), 0);
  return out;
}
