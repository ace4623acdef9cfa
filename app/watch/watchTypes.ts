/** The watched folders as the service shows them. Pure types: safe for renderer/. */

export interface WatchCounts {
  done: number;
  failed: number;
  /** Images seen and not upscaled yet (arriving or waiting their turn). */
  pending: number;
}

/** Where a watched folder's images are upscaled, chosen per folder (not the app's current mode). */
export type WatchMode = 'local' | 'cloud';

export interface WatchedFolder {
  id: string;
  dir: string;
  preset: string;
  outDir: string;
  recursive: boolean;
  paused: boolean;
  mode: WatchMode;
  /** Cloud: the person allowed this folder to spend credits (asked once); until then its images wait. */
  spendAllowed: boolean;
}

export interface WatchView extends WatchedFolder {
  counts: WatchCounts;
  /** Why the folder is not being watched (it went missing, its preset was deleted), in words. */
  problem?: string;
  /** Cloud: what one image costs with the folder's preset, by the price table (an image's exact size may differ). */
  creditsPerImage?: number;
  /** Cloud: an image has arrived and waits until spending is allowed. */
  awaitingApproval?: boolean;
  /** The latest image that failed, and why, in words (also in the folder's journal). */
  lastFailure?: { name: string; reason: string };
}

export interface NewWatch {
  dir: string;
  preset: string;
  /** Default: the preset's output folder, else <dir>/upscaled. */
  outDir?: string;
  recursive?: boolean;
  /** Default: local. */
  mode?: WatchMode;
}
