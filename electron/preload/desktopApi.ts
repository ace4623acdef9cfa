/**
 * What the desktop host adds to the renderer's `window.crisp`: the CrispService itself plus the few
 * things only a desktop window can do (native dialogs, a dropped file's path). Pure types, shared by
 * the preload (which builds the object) and renderer/ (which consumes it); no Node, no Electron.
 */
import type { CrispService } from '../../app/service/crispService.js';

export interface DesktopHost {
  /** Absolute path of a dropped or picked File; '' when it has none (e.g. pasted bytes). */
  pathForFile(file: File): string;
  /** Native "open" dialog for images; [] when cancelled. */
  pickImages(): Promise<string[]>;
  /** Native folder dialog for inputs; null when cancelled. */
  pickInputFolder(): Promise<string | null>;
  /** Native folder dialog for the output folder; null when cancelled. */
  pickOutputFolder(): Promise<string | null>;
  /** Starts a native drag of a finished item's output file (webContents.startDrag), from a dragstart. */
  startDrag(id: string): void;
}

/** The one object the preload exposes as `window.crisp`. */
export interface CrispDesktopApi extends CrispService {
  readonly desktop: DesktopHost;
}

/** Host calls beyond CrispService, for the preload ⇄ main transport (never seen by the renderer). */
export const DESKTOP_METHODS = ['pickImages', 'pickInputFolder', 'pickOutputFolder', 'startDrag'] as const;
export type DesktopMethod = (typeof DESKTOP_METHODS)[number];
