/** Subject "queue": what goes in, what runs, what stops and what runs again. */
import type { JobQueue } from '../jobs/jobQueue.js';
import type { SubjectService } from './methodTable.js';

export function queueMethods(queue: JobQueue): SubjectService<'queue'> {
  return {
    addPaths: (paths, options) => queue.addPaths(paths, options),
    addFile: (name, bytes) => queue.addFile(name, bytes),
    removeItem: (id) => queue.remove(id),
    clearFinished: (options) => queue.clearFinished(options),
    start: () => queue.start(),
    cancel: (id) => queue.cancel(id),
    retry: (id) => queue.retry(id),
    async resume() {
      // Stopped items only: a failed image failed for a reason, and "Retry all" is the way to run it again.
      // The first retry starts a run; the others join it, so the bar counts them as one batch.
      const stopped = queue.snapshot().items.filter((i) => i.status === 'cancelled');
      for (const item of stopped) await queue.retry(item.id);
      if (stopped.length === 0) await queue.start();
    },
    getQueue: async () => queue.snapshot(),
  };
}
