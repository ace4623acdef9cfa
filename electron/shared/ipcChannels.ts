/**
 * The only IPC channel names, shared by main and preload. They never reach the renderer: the preload
 * turns them into the typed `window.crisp` object.
 */
export const IPC = {
  /** invoke(method, args) → CallResult: every CrispService method. */
  call: 'crisp:call',
  /** invoke(method) → CallResult: native dialogs (DesktopMethod). */
  desktop: 'crisp:desktop',
  /** main → renderer: one ServiceEvent. */
  event: 'crisp:event',
  /** renderer → main: start or stop forwarding events to this window. */
  subscribe: 'crisp:subscribe',
} as const;

/**
 * Errors cross IPC as values: Electron would otherwise wrap a thrown error's message in
 * "Error invoking remote method …", which is not words for a user.
 */
/** `code`: app/jobs/userErrors.ts ErrorCode of the failure (absent when unclassified), worded by the renderer. */
export type CallResult = { ok: true; value: unknown } | { ok: false; message: string; code?: string };
