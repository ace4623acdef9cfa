/** The watched folders as the service shows them. Pure types: safe for renderer/. */

export interface WatchCounts {
  done: number;
  failed: number;
  /** Images seen and not upscaled yet (arriving or waiting their turn). */
  pending: number;
}

export interface WatchedFolder {
  id: string;
  dir: string;
  preset: string;
  outDir: string;
  recursive: boolean;
  paused: boolean;
}

export interface WatchView extends WatchedFolder {
  counts: WatchCounts;
  /** Why the folder is not being watched (it went missing, its preset was deleted), in words. */
  problem?: string;
}

export interface NewWatch {
  dir: string;
  preset: string;
  /** Default: the preset's output folder, else <dir>/upscaled. */
  outDir?: string;
  recursive?: boolean;
}
