/**
 * The chain in the app layer: the one job-settings path carries `preModel` to a backend only when set; a service
 * is never asked (the remote backend refuses before any request).
 */
import { describe, expect, it } from 'vitest';
import { jobSettingsFrom, upscaleSettingsFor } from '../../app/jobs/jobSettings.js';
import { CLOUD_PRE_MODEL_REFUSAL, createRemoteBackend } from '../../app/remote/remoteBackend.js';
import { UPSCALE_DEFAULTS } from '../../app/settings/upscaleOptions.js';

const options = { ...UPSCALE_DEFAULTS, model: 'digital-art-4x', scale: 4 as const };

describe('preModel in jobs', () => {
  it('goes to the backend only when set', () => {
    expect(upscaleSettingsFor(jobSettingsFrom(options, 'local'))).not.toHaveProperty('preModel');
    expect(upscaleSettingsFor(jobSettingsFrom({ ...options, preModel: 'custom:dejpeg' }, 'local'))).toMatchObject({
      model: 'digital-art-4x',
      preModel: 'custom:dejpeg',
    });
  });

  it('a remote backend refuses it before any request', async () => {
    // Nothing listens there and the input does not exist: anything but the refusal would fail differently.
    const remote = createRemoteBackend({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
    const settings = upscaleSettingsFor(jobSettingsFrom({ ...options, preModel: 'custom:dejpeg' }, 'cloud'));
    await expect(
      remote.upscale({ inputPath: '/nonexistent.png', inputName: 'cat.png', settings, outputPath: '/tmp/never.png' }),
    ).rejects.toThrow(CLOUD_PRE_MODEL_REFUSAL);
    await remote.close();
  });
});
