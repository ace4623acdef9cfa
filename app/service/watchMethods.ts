/**
 * Subject "watch": the app's watched folders (app/watch/watchManager.ts), each with a preset, paused or
 * resumed, with counts. Refusals are sentences with their own catalog codes.
 */
import type { WatchManager } from '../watch/watchManager.js';
import type { SubjectService } from './methodTable.js';

export function watchMethods(watches: WatchManager): SubjectService<'watch'> {
  return {
    listWatches: async () => watches.views(),
    // Refusals carry their own catalog codes (watch-refused, preset-refused) and sentences: they pass as they are
    // (async: a refusal thrown at once is a rejected call, like any other).
    addWatch: async (req) => watches.add(req),
    removeWatch: async (id) => watches.remove(id),
    pauseWatch: async (id) => watches.setPaused(id, true),
    resumeWatch: async (id) => watches.setPaused(id, false),
    allowWatchSpending: async (id) => watches.allowSpending(id),
  };
}
