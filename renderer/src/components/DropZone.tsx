/**
 * Adding images: drop files or folders anywhere on the window (a full-window overlay shows where they
 * go), paste from the clipboard, or pick them. In the desktop app a dropped file has a real path
 * (addPaths: no copy); in the browser the bytes are sent (addFile), dropped folders are walked here
 * because the browser gives no path, and `dataTransfer.files` covers what has no entry (an image
 * dragged from a web page). Every file that is refused gets its own line.
 */
import { useEffect, useRef, useState, type ChangeEvent } from 'react';
import { EN, type Translator } from '../i18n/index.js';
import { useT } from '../i18n/useT.js';
import { useActions, useApp } from '../stores/appContext.js';
import { ADD_IMAGES_INPUT_ID } from './Shortcuts.js';

const IMAGE_EXTENSIONS = /\.(png|jpe?g|webp)$/i;
const ACCEPT = '.png,.jpg,.jpeg,.webp,image/png,image/jpeg,image/webp';

function isImage(file: File): boolean {
  return IMAGE_EXTENSIONS.test(file.name) || ['image/png', 'image/jpeg', 'image/webp'].includes(file.type);
}

const notAnImage = (f: File, tr: Translator) => tr.t('drop.notAnImage', { name: f.name || tr.t('drop.theItem') });

/** Splits a selection into images to send and one line per refused file. */
export function sortFiles(files: readonly File[], tr: Translator = EN): { images: File[]; rejected: string[] } {
  return { images: files.filter(isImage), rejected: files.filter((f) => !isImage(f)).map((f) => notAnImage(f, tr)) };
}

/** Browser-only: expands dropped folders through the (non-standard but universal) entries API. */
async function filesFromEntries(entries: FileSystemEntry[]): Promise<File[]> {
  const out: File[] = [];
  const walk = async (entry: FileSystemEntry, inFolder: boolean): Promise<void> => {
    if (entry.isFile) {
      const file = await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject));
      // Inside a dropped folder, other files are simply not images to add; dropped one by one, they are refused out loud.
      if (!inFolder || isImage(file)) out.push(file);
      return;
    }
    const reader = (entry as FileSystemDirectoryEntry).createReader();
    // readEntries answers in batches; an empty batch means the folder is exhausted.
    for (;;) {
      const batch = await new Promise<FileSystemEntry[]>((resolve, reject) => reader.readEntries(resolve, reject));
      if (batch.length === 0) break;
      for (const child of batch) await walk(child, true);
    }
  };
  for (const e of entries) await walk(e, false);
  return out;
}

function isTextTarget(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLElement &&
    (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName))
  );
}

const hasFiles = (e: DragEvent) => [...(e.dataTransfer?.types ?? [])].includes('Files');

/** Hands a selection over: desktop files by path, the rest as bytes. */
function useAddSelection() {
  const { desktop } = useApp();
  const { addFiles, addPaths } = useActions();
  const tr = useT();
  return async (files: File[]) => {
    if (desktop) {
      const withPaths = files.map((f) => ({ f, p: desktop.pathForFile(f) }));
      await addPaths(withPaths.filter((x) => x.p).map((x) => x.p));
      const bytesOnly = sortFiles(
        withPaths.filter((x) => !x.p).map((x) => x.f),
        tr,
      );
      await addFiles(bytesOnly.images, bytesOnly.rejected);
    } else {
      const { images, rejected } = sortFiles(files, tr);
      await addFiles(images, rejected);
    }
  };
}

/** The window-wide drop target and its overlay (mounted once, at the app root). */
export function DropOverlay() {
  const { desktop } = useApp();
  const addSelection = useAddSelection();
  const [over, setOver] = useState(false);
  const { t } = useT();
  const depth = useRef(0);

  useEffect(() => {
    const onEnter = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth.current++;
      setOver(true);
    };
    const onOver = (e: DragEvent) => {
      // Without this the browser opens a dropped file itself, leaving the app.
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = hasFiles(e) ? 'copy' : 'none';
    };
    const onLeave = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      depth.current = Math.max(0, depth.current - 1);
      if (depth.current === 0) setOver(false);
    };
    const onDrop = (e: DragEvent) => {
      e.preventDefault();
      depth.current = 0;
      setOver(false);
      const dt = e.dataTransfer;
      if (!dt) return;
      const plain = [...dt.files];
      if (desktop) {
        void addSelection(plain);
        return;
      }
      // Entries must be taken synchronously, before the event ends.
      const entries = [...(dt.items ?? [])].map((i) => i.webkitGetAsEntry?.()).filter((x): x is FileSystemEntry => !!x);
      void (async () => {
        const fromEntries = entries.length ? await filesFromEntries(entries).catch(() => []) : [];
        await addSelection(fromEntries.length ? fromEntries : plain);
      })();
    };
    window.addEventListener('dragenter', onEnter);
    window.addEventListener('dragover', onOver);
    window.addEventListener('dragleave', onLeave);
    window.addEventListener('drop', onDrop);
    return () => {
      window.removeEventListener('dragenter', onEnter);
      window.removeEventListener('dragover', onOver);
      window.removeEventListener('dragleave', onLeave);
      window.removeEventListener('drop', onDrop);
    };
  }, [desktop, addSelection]);

  if (!over) return null;
  return (
    <div className="drop-overlay" aria-hidden="true">
      <p>{t('drop.overlay')}</p>
    </div>
  );
}

export function DropZone() {
  const { desktop } = useApp();
  const { addFiles, addPaths } = useActions();
  const addSelection = useAddSelection();
  const fileInput = useRef<HTMLInputElement>(null);
  const folderInput = useRef<HTMLInputElement>(null);
  const { t } = useT();

  // Pasting an image anywhere adds it, except into a text field (the API key is pasted too).
  useEffect(() => {
    const onPaste = (e: ClipboardEvent) => {
      if (isTextTarget(e.target)) return;
      const files = [...(e.clipboardData?.files ?? [])].filter(isImage);
      if (files.length === 0) return;
      e.preventDefault();
      // A readable name in the person's words and local time ("Pasted image 10-46-35.png"): browsers call
      // every clipboard image "image.png", and the name is what the row and the output file show.
      const now = new Date();
      const time = [now.getHours(), now.getMinutes(), now.getSeconds()]
        .map((n) => String(n).padStart(2, '0'))
        .join('-');
      const ext = (type: string) => (type === 'image/jpeg' ? 'jpg' : type === 'image/webp' ? 'webp' : 'png');
      void addFiles(
        files.map((f, i) =>
          f.name && f.name !== 'image.png'
            ? f
            : new File([f], `${t('paste.name', { time })}${i ? ` (${i + 1})` : ''}.${ext(f.type)}`, { type: f.type }),
        ),
      );
    };
    window.addEventListener('paste', onPaste);
    return () => window.removeEventListener('paste', onPaste);
  }, [addFiles, t]);

  // Both pickers (files, folder) hand their selection over the same way; the input is reset so the
  // same file can be picked again.
  const onPicked = (e: ChangeEvent<HTMLInputElement>) => {
    const files = [...(e.target.files ?? [])];
    e.target.value = '';
    void addSelection(files);
  };

  return (
    <div className="dropzone">
      <p className="dropzone-title">{t('drop.title')}</p>
      <p className="muted">{t('drop.paste')}</p>
      <div className="input-row center">
        <button
          type="button"
          aria-keyshortcuts="Control+O"
          onClick={() => (desktop ? void desktop.pickImages().then(addPaths) : fileInput.current?.click())}
        >
          {t('drop.chooseImages')}
        </button>
        <button
          type="button"
          onClick={() =>
            desktop
              ? void desktop.pickInputFolder().then((f) => (f ? addPaths([f]) : undefined))
              : folderInput.current?.click()
          }
        >
          {t('drop.chooseFolder')}
        </button>
      </div>
      <p className="muted small">{t('drop.formats')}</p>
      {/* The real inputs stay out of the tab order: the buttons above are the keyboard path to them. */}
      <input
        ref={fileInput}
        id={ADD_IMAGES_INPUT_ID}
        type="file"
        multiple
        accept={ACCEPT}
        aria-label={t('drop.addImages')}
        className="visually-hidden"
        tabIndex={-1}
        onChange={onPicked}
      />
      <input
        ref={(el) => {
          folderInput.current = el;
          // webkitdirectory is not in React's attribute list; set it on the element.
          el?.setAttribute('webkitdirectory', '');
        }}
        type="file"
        aria-label={t('drop.addFolder')}
        className="visually-hidden"
        tabIndex={-1}
        onChange={onPicked}
      />
    </div>
  );
}
