/**
 * Download links: `${publicUrl}/downloads/<taskId>/<fileName>?user=<userId>&expires=…&signature=…`.
 * The HMAC covers the path (task + file) and the user, so a link cannot be re-pointed at another file or
 * owner. Expiry is rounded up to the hour so repeated polls hand out the same link (the status of a
 * finished task is built once per hour, see tasks/statusView.ts), and never outlives the file itself.
 */
import type { FileData } from '../contract/index.js';
import type { DecorateFile } from '../service/tasks/statusView.js';
import type { UrlSigner } from '../service/security/urlSigner.js';

const HOUR = 3_600_000;

export interface DownloadTarget {
  userId: string;
  taskId: string;
  fileName: string;
}

export interface DownloadLinks {
  link(target: DownloadTarget, fileExpiresAt: number): string;
  /** Changes exactly when link() may answer differently for the same target (the expiry's hour bucket). */
  validity(): number;
  /** Checks a request path+query; answers the target or why it was refused. */
  verify(url: string): { ok: true; target: DownloadTarget } | { ok: false; reason: 'invalid' | 'expired' };
}

export function createDownloadLinks(
  signer: UrlSigner,
  publicUrl: string,
  ttlMs: number,
  now: () => number = Date.now,
): DownloadLinks {
  const origin = publicUrl.replace(/\/$/, '');
  const bucket = () => Math.ceil((now() + ttlMs) / HOUR);
  return {
    validity: bucket,
    link({ userId, taskId, fileName }, fileExpiresAt) {
      const until = bucket() * HOUR;
      const expiresAt = Math.min(until, fileExpiresAt > 0 ? fileExpiresAt : until);
      return (
        origin +
        signer.sign(
          `/downloads/${encodeURIComponent(taskId)}/${encodeURIComponent(fileName)}`,
          { user: userId },
          expiresAt,
        )
      );
    },
    verify(url) {
      const v = signer.verify(url, now());
      if (!v.ok) return v;
      const m = /^\/downloads\/([^/]+)\/([^/]+)$/.exec(v.pathname);
      const userId = v.params.user;
      if (!m || !userId) return { ok: false, reason: 'invalid' };
      try {
        return { ok: true, target: { userId, taskId: decodeURIComponent(m[1]!), fileName: decodeURIComponent(m[2]!) } };
      } catch {
        return { ok: false, reason: 'invalid' };
      }
    },
  };
}

export function withDownloadLink(links: DownloadLinks, task: { id: string; userId: string }, file: FileData): FileData {
  return {
    ...file,
    downloadLink: links.link({ userId: task.userId, taskId: task.id, fileName: file.fileName }, file.expiresAt),
  };
}

/**
 * The engine's file decorator for `crisp serve`. Its validity lets a finished task's status be built
 * once per hour bucket instead of signing its links on every poll.
 */
export function downloadLinkDecorator(links: DownloadLinks): DecorateFile {
  return Object.assign((task: { id: string; userId: string }, file: FileData) => withDownloadLink(links, task, file), {
    validity: links.validity,
  });
}
