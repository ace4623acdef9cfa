/**
 * Files and folders given to the desktop app: on its command line (first launch, "Open with", the file
 * manager's "Upscale with Crisp" entry), from a second launch while it runs (Electron's 'second-instance'
 * with that launch's argv and working directory) and from macOS's 'open-file' events, which can arrive
 * before the app is ready. They are added to the running window's queue (folders expanded, sub-folders
 * included); with `--preset NAME` that preset is chosen and the queue started, and `--upscale` starts with
 * the chosen preset (what the context-menu entry passes).
 */
import path from 'node:path';
import type { CrispService } from '../../app/service/crispService.js';

export interface LaunchRequest {
  /** Absolute paths, in the order given. */
  paths: string[];
  /** A preset to choose before starting. */
  preset?: string;
  /** Start the queue once the paths are added. */
  start: boolean;
}

/**
 * Reads a launch's argv. argv[0] is the executable; unpackaged (`electron .`), argv[1] is the app's folder.
 * Switches Chromium or the OS add (`--foo`, `--foo=bar`, macOS's `-psn_…`) are ignored; relative paths are
 * resolved against the launch's working directory, not this process's.
 */
export function parseLaunchArgs(argv: readonly string[], cwd: string, packaged: boolean): LaunchRequest {
  const args = argv.slice(packaged ? 1 : 2);
  const paths: string[] = [];
  let preset: string | undefined;
  let start = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      paths.push(...args.slice(i + 1).map((p) => path.resolve(cwd, p)));
      break;
    }
    if (a === '--preset' && i + 1 < args.length) {
      preset = args[++i];
      start = true;
    } else if (a.startsWith('--preset=')) {
      preset = a.slice('--preset='.length);
      start = true;
    } else if (a === '--upscale') start = true;
    else if (!a.startsWith('-')) paths.push(path.resolve(cwd, a));
  }
  return { paths, ...(preset ? { preset } : {}), start };
}

type LaunchService = Pick<CrispService, 'addPaths' | 'choosePreset' | 'listPresets' | 'start'>;

export interface LaunchHandler {
  /** A launch's files (queued until the service is ready). */
  open(request: LaunchRequest): Promise<void>;
  /** The service is up: what arrived before is handled now, in order. */
  ready(service: LaunchService): Promise<void>;
}

/** `report` shows a refusal (an unknown preset) in words; nothing of the request is lost before it. */
export function createLaunchHandler(report: (message: string) => void): LaunchHandler {
  let service: LaunchService | undefined;
  const early: LaunchRequest[] = [];

  async function handle(svc: LaunchService, req: LaunchRequest): Promise<void> {
    if (req.paths.length === 0 && !req.preset) return;
    try {
      if (req.preset) await svc.choosePreset(req.preset);
      else if (req.start) await svc.choosePreset((await svc.listPresets()).chosen);
      const added = req.paths.length > 0 ? await svc.addPaths(req.paths, { recursive: true }) : [];
      if (req.start && added.some((i) => i.status === 'queued')) await svc.start();
    } catch (e) {
      report(e instanceof Error ? e.message : String(e));
    }
  }

  return {
    async open(req) {
      if (service) await handle(service, req);
      else early.push(req);
    },
    async ready(svc) {
      service = svc;
      for (const req of early.splice(0)) await handle(svc, req);
    },
  };
}
