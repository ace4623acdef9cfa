/** Ids of the page's landmarks that controls elsewhere move the focus to. */

/** The main pane (results and the queue): the skip link's target, and where focus goes when its control vanishes. */
export const MAIN_ID = 'main';

/** Moves the keyboard focus to the main pane (it has tabIndex −1: focusable by script, not a tab stop). */
export function focusMain(): void {
  document.getElementById(MAIN_ID)?.focus();
}
