/**
 * Adding images: drop files or folders, paste from the clipboard, or pick them. In the desktop app a
 * dropped file has a real path (addPaths: no copy); in the browser the bytes are sent (addFile), and
 * dropped folders are walked here because the browser gives no path.
 */
import { useEffect, useRef, useState, type ChangeEvent, type DragEvent } from 'react';
import { useActions, useApp } from '../stores/appContext.js';

const IMAGE_EXTENSIONS = /\.(png|jpe?g|webp)$/i;
const ACCEPT = '.png,.jpg,.jpeg,.webp,image/png,image/jpeg,image/webp';

function isImage(file: File): boolean {
  return IMAGE_EXTENSIONS.test(file.name) || ['image/png', 'image/jpeg', 'image/webp'].includes(file.type);
}

/** Browser-only: expands dropped folders through the (non-standard but universal) entries API. */
async function filesFromEntries(items: DataTransferItemList): Promise<File[]> {
  const entries = [...items].map((i) => i.webkitGetAsEntry?.()).filter((e): e is FileSystemEntry => !!e);
  const out: File[] = [];
  const walk = async (entry: FileSystemEntry): Promise<void> => {
    if (entry.isFile) {
      const file = await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject));
      if (isImage(file)) out.push(file);
      return;
    }
    const reader = (entry as FileSystemDirectoryEntry).createReader();
    // readEntries answers in batches; an empty batch means the folder is exhausted.
    for (;;) {
      const batch = await new Promise<FileSystemEntry[]>((resolve, reject) => reader.readEntries(resolve, reject));
      if (batch.length === 0) break;
      for (const child of batch) await walk(child);
    }
  };
  for (const e of entries) await walk(e);
  return out;
}

function isTextTarget(target: EventTarget | null): boolean {
  return target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
}

export function DropZone() {
  const { desktop } = useApp();
  const { addFiles, addPaths } = useActions();
  const fileInput = useRef<HTMLInputElement>(null);
  const folderInput = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);

  const addFileList = async (files: File[]) => {
    if (desktop) {
      const withPaths = files.map((f) => ({ f, p: desktop.pathForFile(f) }));
      await addPaths(withPaths.filter((x) => x.p).map((x) => x.p));
      await addFiles(withPaths.filter((x) => !x.p).map((x) => x.f));
    } else {
      await addFiles(files.filter(isImage));
    }
  };

  // Pasting an image anywhere adds it, except into a text field (the API key is pasted too).
  useEffect(() => {
    const onPaste = (e: ClipboardEvent) => {
      if (isTextTarget(e.target)) return;
      const files = [...(e.clipboardData?.files ?? [])].filter(isImage);
      if (files.length === 0) return;
      e.preventDefault();
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      void addFiles(files.map((f, i) => (f.name && f.name !== 'image.png' ? f : new File([f], `pasted-${stamp}${i ? `-${i}` : ''}.png`, { type: f.type }))));
    };
    window.addEventListener('paste', onPaste);
    return () => window.removeEventListener('paste', onPaste);
  }, [addFiles]);

  const onDrop = async (e: DragEvent<HTMLDivElement>) => {
    e.preventDefault();
    setOver(false);
    if (desktop) {
      await addFileList([...e.dataTransfer.files]);
      return;
    }
    const files = e.dataTransfer.items?.length ? await filesFromEntries(e.dataTransfer.items) : [...e.dataTransfer.files];
    await addFiles(files.filter(isImage));
  };

  // Both pickers (files, folder) hand their selection over the same way; the input is reset so the
  // same file can be picked again.
  const onPicked = (e: ChangeEvent<HTMLInputElement>) => {
    const files = [...(e.target.files ?? [])];
    e.target.value = '';
    void addFileList(files);
  };

  return (
    <div
      className={over ? 'dropzone over' : 'dropzone'}
      onDragOver={(e) => {
        e.preventDefault();
        e.dataTransfer.dropEffect = 'copy';
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => void onDrop(e)}
    >
      <p className="dropzone-title">Drop images or folders here</p>
      <p className="muted">or paste an image (Ctrl+V), or</p>
      <div className="input-row center">
        <button type="button" onClick={() => (desktop ? void desktop.pickImages().then(addPaths) : fileInput.current?.click())}>
          Choose images…
        </button>
        <button
          type="button"
          onClick={() => (desktop ? void desktop.pickInputFolder().then((f) => (f ? addPaths([f]) : undefined)) : folderInput.current?.click())}
        >
          Choose a folder…
        </button>
      </div>
      <p className="muted small">JPG, PNG and WebP</p>
      {/* The real inputs stay out of the tab order: the buttons above are the keyboard path to them. */}
      <input
        ref={fileInput}
        type="file"
        multiple
        accept={ACCEPT}
        aria-label="Add images"
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
        aria-label="Add a folder"
        className="visually-hidden"
        tabIndex={-1}
        onChange={onPicked}
      />
    </div>
  );
}
