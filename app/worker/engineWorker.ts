/**
 * The engine worker process: runs the upscaling core so that a native crash, GPU fault or out-of-memory kill
 * takes down this process only, never the app (workerMain.ts has the logic; core's own worker threads keep
 * even this process's event loop free for cancels).
 */
import { parentChannel } from './parentChannel.js';
import { startWorkerMain } from './workerMain.js';

const channel = parentChannel();
const main = startWorkerMain(channel);
channel.onMessage((msg) => main.handle(msg));
// The app was killed (kill -9 of `crisp watch`, a crash): its jobs are nobody's now; stop them and exit quietly.
channel.onClose(() => main.handle({ type: 'shutdown' }));
