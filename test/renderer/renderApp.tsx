/** Renders the whole renderer against the generated fake service (the real app layer, scripted edges) in jsdom. */
import { configure, render } from '@testing-library/react';
import { App } from '../../renderer/src/App.js';
import { AppProvider } from '../../renderer/src/stores/appContext.js';
import type { DesktopHost } from '../../electron/preload/desktopApi.js';
import type { BrowserHost } from '../../renderer/src/service/httpService.js';
import { createFakeService, PNG_1x1, type FakeOptions } from './fakeService.js';

// The fake runs the real queue (files, a settings store): on a loaded shared machine a step can take
// longer than Testing Library's 1 s default. Waiting longer never makes a wrong answer pass.
configure({ asyncUtilTimeout: 15_000 });

let urls = 0;
/** jsdom has no object URLs; thumbnails only need a distinct string. */
export function stubObjectUrls(): void {
  URL.createObjectURL = () => `blob:fake/${++urls}`;
  URL.revokeObjectURL = () => undefined;
}

/** jsdom's Blob lacks arrayBuffer(); browsers and Electron have it. FileReader is jsdom's way in. */
function polyfillBlobArrayBuffer(): void {
  if (typeof Blob.prototype.arrayBuffer === 'function') return;
  Blob.prototype.arrayBuffer = function arrayBuffer(this: Blob) {
    return new Promise<ArrayBuffer>((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(reader.result as ArrayBuffer);
      reader.onerror = () => reject(reader.error);
      reader.readAsArrayBuffer(this);
    });
  };
}

export async function renderApp(options: FakeOptions & { desktop?: DesktopHost; browser?: BrowserHost } = {}) {
  stubObjectUrls();
  polyfillBlobArrayBuffer();
  // user-event's radio arrow-key walk calls CSS.escape, which jsdom does not provide.
  if (typeof globalThis.CSS === 'undefined')
    Object.assign(globalThis, { CSS: { escape: (s: string) => s.replace(/([^\w-])/g, '\\$1') } });
  const fake = await createFakeService(options);
  const view = render(
    <AppProvider service={fake} desktop={options.desktop ?? null} browser={options.browser ?? null}>
      <App />
    </AppProvider>,
  );
  return { fake, ...view };
}

export function pngFile(name: string): File {
  return new File([PNG_1x1], name, { type: 'image/png' });
}
