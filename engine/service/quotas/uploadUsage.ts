/**
 * What a user's upload sessions hold right now, read from <data>/uploads/<id>/session.json (the layout
 * UploadStore writes). Reading the sessions from disk, rather than a counter kept beside them, means a
 * restart, a sweep or a crash can never leave the quota out of step with the files really there.
 * Cost: one small JSON read per live session, paid by get-upload-url only.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { readJson } from '../storage/atomicFile.js';

export interface UploadUsage {
  /** Sessions started and not completed (and not expired). */
  openUploads: number;
  /** Declared sizes of the user's unexpired sessions, completed or not. */
  bytes: number;
}

interface SessionSummary {
  userId: string;
  completed: boolean;
  session: { fileSize: number; expiresAt: number };
}

export async function uploadUsageOf(uploadsRoot: string, userId: string, now: number): Promise<UploadUsage> {
  const usage: UploadUsage = { openUploads: 0, bytes: 0 };
  const ids = await readdir(uploadsRoot).catch(() => [] as string[]);
  await Promise.all(
    ids.map(async (id) => {
      if (!/^[0-9a-f-]{36}$/.test(id)) return;
      const s = await readJson<SessionSummary>(path.join(uploadsRoot, id, 'session.json')).catch(() => undefined);
      if (!s || s.userId !== userId || now > s.session.expiresAt) return;
      usage.bytes += s.session.fileSize;
      if (!s.completed) usage.openUploads++;
    }),
  );
  return usage;
}
