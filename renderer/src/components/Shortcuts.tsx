/**
 * Window-wide keyboard shortcuts and their help dialog (`?`). Text fields keep their keys: nothing here
 * fires while typing, except the Ctrl/⌘ combinations. A dialog that handles Escape itself marks the
 * event (preventDefault), so Escape closes the dialog rather than stopping the batch.
 */
import { useEffect, useRef } from 'react';
import type { MessageKey } from '../i18n/catalog.js';
import { useT } from '../i18n/useT.js';
import { useActions, useApp, useQueue, useSession } from '../stores/appContext.js';
import { selectRunning } from '../stores/queueStore.js';
import { useStartable } from './ActionBar.js';

/**
 * Keys and what they do. Key caps are printed differently by language (Ctrl is Strg on German
 * keyboards), so `{ctrl}`, `{enter}` and `{del}` are filled from the catalog.
 */
export const SHORTCUTS: [keys: string, what: MessageKey][] = [
  ['{ctrl}/⌘ + O', 'shortcuts.add'],
  ['{ctrl}/⌘ + V', 'shortcuts.paste'],
  ['{ctrl}/⌘ + {enter}', 'shortcuts.start'],
  ['Esc', 'shortcuts.stop'],
  ['↑ / ↓', 'shortcuts.move'],
  ['{del}', 'shortcuts.delete'],
  ['?', 'shortcuts.help'],
];

/** The file input of the drop zone: Ctrl/⌘+O opens it in the browser UI. */
export const ADD_IMAGES_INPUT_ID = 'crisp-add-images';

function isTyping(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLElement &&
    (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName))
  );
}

export function useGlobalShortcuts(): void {
  const { desktop, session } = useApp();
  const { start, stop, addPaths } = useActions();
  const startable = useStartable();
  const running = useQueue(selectRunning);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const mod = e.ctrlKey || e.metaKey;
      if (mod && e.key.toLowerCase() === 'o') {
        e.preventDefault();
        if (desktop) void desktop.pickImages().then(addPaths);
        else document.getElementById(ADD_IMAGES_INPUT_ID)?.click();
      } else if (mod && e.key === 'Enter') {
        if (!startable) return;
        e.preventDefault();
        void start();
      } else if (mod && e.key === '.') {
        if (!running) return;
        e.preventDefault();
        void stop();
      } else if (e.key === 'Escape' && !e.defaultPrevented && !document.querySelector('[role="dialog"]') && running) {
        e.preventDefault();
        void stop();
      } else if (e.key === '?' && !mod && !isTyping(e.target)) {
        e.preventDefault();
        session.getState().setHelpOpen(true);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [desktop, startable, running, start, stop, addPaths, session]);
}

export function ShortcutsDialog() {
  const open = useSession((s) => s.helpOpen);
  const { session } = useApp();
  const closeButton = useRef<HTMLButtonElement>(null);
  const { t } = useT();
  useEffect(() => {
    if (!open) return;
    const opener = document.activeElement as HTMLElement | null;
    closeButton.current?.focus();
    return () => opener?.focus?.();
  }, [open]);
  if (!open) return null;
  const close = () => session.getState().setHelpOpen(false);
  return (
    <div className="backdrop" onPointerDown={(e) => e.target === e.currentTarget && close()}>
      <div
        role="dialog"
        aria-modal="true"
        aria-labelledby="shortcuts-title"
        className="dialog"
        onKeyDown={(e) => {
          if (e.key === 'Escape' || e.key === 'Tab') {
            // One focusable control: Tab stays on it; Escape closes.
            e.preventDefault();
            if (e.key === 'Escape') close();
          }
        }}
      >
        <h2 id="shortcuts-title">{t('shortcuts.title')}</h2>
        <table className="shortcuts">
          <tbody>
            {SHORTCUTS.map(([keys, what]) => (
              <tr key={what}>
                <th scope="row">
                  <kbd>
                    {keys.replace(/\{(\w+)\}/g, (_, cap: string) =>
                      t(cap === 'ctrl' ? 'keys.ctrl' : cap === 'enter' ? 'keys.enter' : 'keys.delete'),
                    )}
                  </kbd>
                </th>
                <td>{t(what)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <button ref={closeButton} type="button" onClick={close}>
          {t('shortcuts.close')}
        </button>
      </div>
    </div>
  );
}
