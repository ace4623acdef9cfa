/**
 * Subject "watch": the app's watched folders (app/watch/watchManager.ts), each with a preset, paused or
 * resumed, with counts. Refusals are sentences (BadRequestError).
 */
import { PresetError } from '../settings/presetStore.js';
import { FolderWatchError } from '../watch/folderWatcher.js';
import type { WatchManager } from '../watch/watchManager.js';
import type { SubjectService } from './methodTable.js';
import { CrispError } from '../../engine/contract/index.js';

async function refusing<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof PresetError || e instanceof FolderWatchError) throw new CrispError('bad-request', e.message);
    throw e;
  }
}

export function watchMethods(watches: WatchManager): SubjectService<'watch'> {
  return {
    listWatches: async () => watches.views(),
    addWatch: (req) => refusing(() => watches.add(req)),
    removeWatch: (id) => refusing(() => watches.remove(id)),
    pauseWatch: (id) => refusing(() => watches.setPaused(id, true)),
    resumeWatch: (id) => refusing(() => watches.setPaused(id, false)),
    allowWatchSpending: (id) => refusing(() => watches.allowSpending(id)),
  };
}
