/** Options for fetching start-task `urls` (implemented in fetchImage.ts). */
export interface FetchImageOptions {
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  /** Loopback, private and link-local addresses are refused unless this is set (`--allow-private-urls`). */
  allowPrivate: boolean;
  signal?: AbortSignal;
}

export interface FetchedImage {
  /** Bytes written to the target file. */
  size: number;
  /** A safe file name derived from the URL's last path segment. */
  originalFileName: string;
  contentType: string;
}
