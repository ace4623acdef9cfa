/** The method table is the one list: the service, the argument schemas, both clients and the fake all match it. */
import { afterEach, describe, expect, it } from 'vitest';
import { SERVICE_METHODS, SERVICE_TABLE, methodsWithWire } from '../../app/service/methodTable.js';
import { SERVICE_ARGS } from '../../app/service/serviceArgs.js';
import { createHttpService } from '../../renderer/src/service/httpService.js';
import { closeFakes, createFakeService } from './fakeService.js';

afterEach(closeFakes);

describe('method table', () => {
  it('lists every method once, grouped by subject, with bytes only where they travel', () => {
    expect(new Set(SERVICE_METHODS).size).toBe(SERVICE_METHODS.length);
    expect(Object.keys(SERVICE_ARGS).sort()).toEqual([...SERVICE_METHODS].sort());
    expect(methodsWithWire('bytesIn')).toEqual(['importModel', 'addFile']);
    expect(methodsWithWire('bytesOut')).toEqual(['modelPreview', 'readImage']);
    expect([...new Set(Object.values(SERVICE_TABLE).map((m) => m.subject))].sort()).toEqual([
      'credits',
      'models',
      'presets',
      'queue',
      'results',
      'settings',
      'watch',
    ]);
  });

  it('the real service (inside the fake) and the HTTP client expose exactly the table', async () => {
    const fake = await createFakeService();
    const methodsOf = (o: object) =>
      Object.keys(o).filter((k) => typeof (o as Record<string, unknown>)[k] === 'function');
    const fakeMethods = methodsOf(fake).filter(
      (k) =>
        ![
          'subscribe',
          'step',
          'finishAll',
          'images',
          'progressDownload',
          'finishDownload',
          'markDownloaded', // the bridge's own hook (ServiceHandle), deliberately not on the wire
          'emit',
          'close',
        ].includes(k),
    );
    expect(fakeMethods.sort()).toEqual([...SERVICE_METHODS].sort());
    const http = createHttpService({ token: 't', fetchImpl: async () => new Response('{}') });
    expect(
      methodsOf(http)
        .filter((k) => !['subscribe', 'downloadLink'].includes(k))
        .sort(),
    ).toEqual([...SERVICE_METHODS].sort());
  });

  it('the fake refuses what the transports refuse, before the service sees it', async () => {
    const fake = await createFakeService();
    await expect(fake.updateSettings({ scale: 9 as 4 })).rejects.toThrow(/updateSettings: invalid arguments/);
    expect((await fake.getSettings()).scale).toBe(4);
  });
});
