/** Native open dialogs, behind the one Electron function they use. */
import type { OpenDialogOptions } from 'electron';

export type ShowOpenDialog = (options: OpenDialogOptions) => Promise<{ canceled: boolean; filePaths: string[] }>;

export const IMAGE_FILTERS = [{ name: 'Images', extensions: ['png', 'jpg', 'jpeg', 'webp'] }];

export function createNativeDialogs(show: ShowOpenDialog) {
  return {
    async pickImages(): Promise<string[]> {
      const r = await show({
        title: 'Add images',
        properties: ['openFile', 'multiSelections'],
        filters: IMAGE_FILTERS,
      });
      return r.canceled ? [] : r.filePaths;
    },
    async pickInputFolder(): Promise<string | null> {
      const r = await show({ title: 'Add a folder of images', properties: ['openDirectory'] });
      return r.canceled ? null : (r.filePaths[0] ?? null);
    },
    async pickOutputFolder(): Promise<string | null> {
      const r = await show({ title: 'Choose the output folder', properties: ['openDirectory', 'createDirectory'] });
      return r.canceled ? null : (r.filePaths[0] ?? null);
    },
  };
}
