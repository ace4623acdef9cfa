/** Subject "credits": what the waiting images will cost, and the account's balance (Cloud mode). */
import type { UpscaleBackend } from '../backends/backend.js';
import { estimateCreditsFor } from '../credits/estimate.js';
import { jobSettingsFrom, upscaleSettingsFor } from '../jobs/jobSettings.js';
import { countTooLarge } from '../jobs/outputFits.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { SettingsStore } from '../settings/settingsStore.js';
import type { Settings } from './crispService.js';
import type { SubjectService } from './methodTable.js';

export function creditMethods(
  settings: SettingsStore,
  queue: JobQueue,
  backendFor: (s: Settings) => Promise<UpscaleBackend>,
): SubjectService<'credits'> {
  return {
    async estimate() {
      const s = await settings.get();
      // Priced from the job the queue would send, so the estimate and the run read the settings alike.
      // With an exact size, each image is priced at the scale its own size needs.
      const job = upscaleSettingsFor(jobSettingsFrom(s, s.mode));
      const inputs = queue.queuedItems().map((i) => i.inputDimensions);
      const tooLarge = await countTooLarge(s.mode, job, inputs);
      return { ...estimateCreditsFor(s.mode, job, inputs), ...(tooLarge > 0 ? { tooLarge } : {}) };
    },
    async getAccount() {
      const s = await settings.get();
      if (s.mode === 'local') return { available: false };
      return (await backendFor(s)).getAccount();
    },
  };
}
