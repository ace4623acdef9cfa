/**
 * The comparison full-window: CompareView in a modal dialog with the result actions and Close. The
 * dialog keeps the keyboard: Escape closes it wherever the focus is (also after a control at its limit),
 * Tab cycles inside it, and focus that escapes (a click on the backdrop's edge, a control that went away)
 * is brought back. On close the focus returns to the control that opened it.
 */
import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import type { JobItem } from '../../../app/service/crispService.js';
import { useT } from '../i18n/useT.js';
import { CompareView } from './CompareView.js';
import { ResultActions } from './ResultActions.js';

const FOCUSABLE = 'button:not([disabled]), [tabindex="0"]';

export function CompareDialog({ item, onClose }: { item: JobItem; onClose: () => void }) {
  const { t } = useT();
  const dialog = useRef<HTMLDivElement>(null);
  const titleId = useId();
  const close = useRef(onClose);
  close.current = onClose;
  // Read while rendering, before the view's own effect moves the focus into the dialog.
  const [opener] = useState(() => document.activeElement as HTMLElement | null);

  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      e.preventDefault();
      e.stopPropagation();
      close.current();
    };
    const onFocusIn = (e: FocusEvent) => {
      const box = dialog.current;
      if (box && e.target instanceof Node && !box.contains(e.target))
        box.querySelector<HTMLElement>('[role="slider"]')?.focus();
    };
    // Capture phase on window: Escape is the dialog's, whichever element (or none) has the focus.
    window.addEventListener('keydown', onKey, true);
    document.addEventListener('focusin', onFocusIn);
    return () => {
      window.removeEventListener('keydown', onKey, true);
      document.removeEventListener('focusin', onFocusIn);
      opener?.focus?.();
    };
  }, [opener]);

  const onDialogKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== 'Tab') return;
    const focusables = [...(dialog.current?.querySelectorAll<HTMLElement>(FOCUSABLE) ?? [])];
    const first = focusables[0];
    const last = focusables[focusables.length - 1];
    if (e.shiftKey && document.activeElement === first) {
      e.preventDefault();
      last?.focus();
    } else if (!e.shiftKey && document.activeElement === last) {
      e.preventDefault();
      first?.focus();
    }
  };

  return (
    <div className="backdrop" onPointerDown={(e) => e.target === e.currentTarget && onClose()}>
      <div
        ref={dialog}
        role="dialog"
        aria-modal="true"
        aria-label={t('compare.label', { name: item.inputName })}
        className="compare"
        onKeyDown={onDialogKey}
      >
        <CompareView
          item={item}
          titleId={titleId}
          autoFocus
          actions={<ResultActions item={item} />}
          extra={
            <button type="button" aria-label={t('compare.closeLabel')} onClick={onClose}>
              {t('compare.close')}
            </button>
          }
        />
      </div>
    </div>
  );
}
