// Runs a TypeScript worker-thread entry from the sources (tests, `node --import tsx`): tsx's loader is
// registered in this thread first, as `--import tsx` does not reach worker threads on Node 20. The built
// CLI and the desktop build start the compiled coreWorker.js directly and never load this file.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.tsEntry);
