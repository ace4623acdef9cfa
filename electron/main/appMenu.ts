/**
 * The application menu as a plain template (tested without Electron). Commands act on the service
 * directly in the main process, so menu accelerators work even while a dialog has focus.
 */
import type { MenuItemConstructorOptions } from 'electron';

export interface MenuCommands {
  addImages(): void;
  addFolder(): void;
  chooseOutputFolder(): void;
  upscale(): void;
  stop(): void;
  openDocs(): void;
}

export function appMenuTemplate(commands: MenuCommands, platform: NodeJS.Platform): MenuItemConstructorOptions[] {
  const isMac = platform === 'darwin';
  return [
    ...(isMac ? [{ role: 'appMenu' as const }] : []),
    {
      label: '&File',
      submenu: [
        { label: 'Add Images…', accelerator: 'CmdOrCtrl+O', click: () => commands.addImages() },
        { label: 'Add Folder…', accelerator: 'CmdOrCtrl+Shift+O', click: () => commands.addFolder() },
        { label: 'Choose Output Folder…', click: () => commands.chooseOutputFolder() },
        { type: 'separator' },
        isMac ? { role: 'close' } : { role: 'quit' },
      ],
    },
    { role: 'editMenu' },
    {
      label: '&Batch',
      submenu: [
        { label: 'Upscale', accelerator: 'CmdOrCtrl+Enter', click: () => commands.upscale() },
        { label: 'Stop', accelerator: 'CmdOrCtrl+.', click: () => commands.stop() },
      ],
    },
    {
      label: '&View',
      submenu: [
        { role: 'resetZoom' },
        { role: 'zoomIn' },
        { role: 'zoomOut' },
        { type: 'separator' },
        { role: 'togglefullscreen' },
      ],
    },
    { role: 'windowMenu' },
    { role: 'help', submenu: [{ label: 'Crisp Documentation', click: () => commands.openDocs() }] },
  ];
}
