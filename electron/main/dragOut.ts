/**
 * Dragging a finished result out of the window: the page only names the item; the main process looks up
 * its output file itself (the page never hands over a path) and starts a native file drag with a
 * thumbnail of the image as the drag icon.
 */
import type { CrispService } from '../../app/service/crispService.js';
import type { IpcSender } from './serviceIpc.js';

export function createDragOut<Icon>(service: Pick<CrispService, 'getQueue'>, iconFor: (file: string) => Icon) {
  return async (sender: IpcSender, id?: string): Promise<boolean> => {
    if (!id || !sender.startDrag) return false;
    const item = (await service.getQueue()).items.find((i) => i.id === id);
    if (item?.status !== 'done' || !item.outputPath) return false;
    sender.startDrag({ file: item.outputPath, icon: iconFor(item.outputPath) as never });
    return true;
  };
}
