/** Subject "results": a finished item's bytes (thumbnails, compare, copy) and the desktop's open/show. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { sniffImageType } from '../../engine/core/index.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { JobItem } from './crispService.js';
import type { SubjectService } from './methodTable.js';

/** What only a desktop can do with a file; absent in the browser UI, where both methods answer false. */
export interface DesktopShell {
  /** Show the file in the file manager. */
  revealOutput?: (outputPath: string) => boolean | Promise<boolean>;
  /** Open the file in the system's default app. */
  openOutput?: (outputPath: string) => boolean | Promise<boolean>;
  /** Open a folder in the file manager (the custom models folder). */
  openFolder?: (folder: string) => boolean | Promise<boolean>;
}

const MIME_OF_EXT: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
};

export function mimeOf(file: string, head: Uint8Array): string {
  return (
    sniffImageType(head.subarray(0, 16)) ?? MIME_OF_EXT[path.extname(file).toLowerCase()] ?? 'application/octet-stream'
  );
}

/** The queue item, or the sentence a person sees when it went away meanwhile. */
export function itemOrThrow(queue: JobQueue, id: string): JobItem {
  const item = queue.get(id);
  if (!item) throw new Error('That item is no longer in the queue.');
  return item;
}

export function resultMethods(queue: JobQueue, shell: DesktopShell): SubjectService<'results'> {
  const withOutput = async (id: string, act: ((p: string) => boolean | Promise<boolean>) | undefined) => {
    const item = itemOrThrow(queue, id);
    if (!act || !item.outputPath || item.status !== 'done') return false;
    return act(item.outputPath);
  };
  return {
    async readImage(id, which) {
      const item = itemOrThrow(queue, id);
      const file = which === 'input' ? item.inputPath : item.outputPath;
      if (!file) throw new Error(`${item.inputName} has no result yet.`);
      const bytes = new Uint8Array(await readFile(file));
      return { mime: mimeOf(file, bytes), bytes };
    },
    revealOutput: (id) => withOutput(id, shell.revealOutput),
    openOutput: (id) => withOutput(id, shell.openOutput),
  };
}
