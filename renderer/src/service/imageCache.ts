/**
 * Object URLs for thumbnails and comparisons. Each image is read once through CrispService.readImage
 * and kept as a blob: URL (the CSP allows img-src blob:), so re-renders never re-read files.
 */
import type { CrispService } from '../../../app/service/crispService.js';

export interface ImageCache {
  /** `version` distinguishes a re-run's output from the previous one (e.g. the output path). */
  url(id: string, which: 'input' | 'output', version?: string): Promise<string>;
  dispose(): void;
}

export function createImageCache(service: Pick<CrispService, 'readImage'>): ImageCache {
  const urls = new Map<string, Promise<string>>();
  return {
    url(id, which, version = '') {
      const key = `${id}\u0000${which}\u0000${version}`;
      let pending = urls.get(key);
      if (!pending) {
        pending = service
          .readImage(id, which)
          .then(({ mime, bytes }) => URL.createObjectURL(new Blob([bytes as BlobPart], { type: mime })));
        // A failed read must be retried next time rather than cached as a failure.
        pending.catch(() => urls.delete(key));
        urls.set(key, pending);
      }
      return pending;
    },
    dispose() {
      for (const p of urls.values())
        p.then(
          (u) => URL.revokeObjectURL(u),
          () => undefined,
        );
      urls.clear();
    },
  };
}
