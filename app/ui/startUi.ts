/**
 * Composes `crisp ui`: the app layer (createService, with the file secret store and the default
 * child-process engine worker) behind the HTTP bridge. Used by the command and by the e2e tests.
 */
import os from 'node:os';
import path from 'node:path';
import type { Settings } from '../service/crispService.js';
import { createService, type ServiceHandle } from '../service/createService.js';
import { createFileSecretStore } from '../secrets/fileSecretStore.js';
import { startUiServer, type RunningUiServer } from './bridgeServer.js';
import { isRendererBuilt, rendererDir as defaultRendererDir } from './rendererDir.js';
import { catalogMessage, CrispError } from '../../engine/contract/index.js';

export const DEFAULT_APP_DATA_DIR = path.join(os.homedir(), '.crisp', 'app');

export interface UiOptions {
  port?: number;
  dataDir?: string;
  modelDirs?: string[];
  rendererDir?: string;
  token?: string;
  settingsDefaults?: Partial<Settings>;
}

export interface RunningUi {
  server: RunningUiServer;
  service: ServiceHandle;
  close(): Promise<void>;
}

/** `crisp ui` without a built renderer: catalog row ui-not-built. */
export class UiNotBuiltError extends CrispError {
  override readonly name = 'UiNotBuiltError';
  constructor(indexHtml: string) {
    super('ui-not-built', catalogMessage('ui-not-built', { name: indexHtml }), { params: { name: indexHtml } });
  }
}

export async function startUi(options: UiOptions = {}): Promise<RunningUi> {
  const dir = options.rendererDir ?? defaultRendererDir();
  if (!isRendererBuilt(dir)) throw new UiNotBuiltError(path.join(dir, 'index.html'));
  const dataDir = path.resolve(options.dataDir ?? DEFAULT_APP_DATA_DIR);
  const service = await createService({
    dataDir,
    secrets: createFileSecretStore(path.join(dataDir, 'secrets.json')),
    ...(options.modelDirs ? { modelDirs: options.modelDirs } : {}),
    ...(options.settingsDefaults ? { settingsDefaults: options.settingsDefaults } : {}),
  });
  let server: RunningUiServer;
  try {
    server = await startUiServer({
      service,
      rendererDir: dir,
      port: options.port ?? 0,
      ...(options.token ? { token: options.token } : {}),
      onDownloaded: (ids) => service.markDownloaded(ids),
    });
  } catch (e) {
    await service.close();
    throw e;
  }
  return {
    server,
    service,
    async close() {
      await server.close();
      await service.close();
    },
  };
}
