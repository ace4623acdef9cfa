/**
 * Double upscale in the app layer: the one job-settings path carries `passes` to a backend and names the
 * output by the total scale; a service is never asked (the remote backend refuses before any request).
 */
import { describe, expect, it } from 'vitest';
import { jobOutputName, jobSettingsFrom, upscaleSettingsFor } from '../../app/jobs/jobSettings.js';
import { CLOUD_PASSES_REFUSAL, createRemoteBackend } from '../../app/remote/remoteBackend.js';
import { UPSCALE_DEFAULTS } from '../../app/settings/upscaleOptions.js';

const options = { ...UPSCALE_DEFAULTS, model: 'digital-art-4x', scale: 4 as const };

describe('passes in jobs', () => {
  it('goes to the backend only when 2, and the name says ×16', () => {
    const once = jobSettingsFrom(options, 'local');
    expect(upscaleSettingsFor(once)).not.toHaveProperty('passes');
    expect(jobOutputName(once, '/in/cat.png')).toBe('cat_digital-art-4x_x4.png');
    const twice = jobSettingsFrom({ ...options, passes: 2 }, 'local');
    expect(upscaleSettingsFor(twice)).toMatchObject({ scale: 4, passes: 2 });
    expect(jobOutputName(twice, '/in/cat.png')).toBe('cat_digital-art-4x_x16.png');
  });

  it('a remote backend refuses two passes before any request', async () => {
    // Nothing listens there and the input does not exist: anything but the refusal would fail differently.
    const remote = createRemoteBackend({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
    const settings = upscaleSettingsFor(jobSettingsFrom({ ...options, passes: 2 }, 'cloud'));
    await expect(
      remote.upscale({ inputPath: '/nonexistent.png', inputName: 'cat.png', settings, outputPath: '/tmp/never.png' }),
    ).rejects.toThrow(CLOUD_PASSES_REFUSAL);
    await remote.close();
  });
});
