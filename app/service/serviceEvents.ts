/** The service's event fan-out: one listener's fault never reaches the queue or the other listeners. */
import type { ServiceEvent } from './crispService.js';

export interface ServiceEvents {
  emit(event: ServiceEvent): void;
  subscribe(listener: (event: ServiceEvent) => void): () => void;
  clear(): void;
}

export function createServiceEvents(): ServiceEvents {
  const listeners = new Set<(e: ServiceEvent) => void>();
  return {
    emit(event) {
      for (const l of [...listeners]) {
        try {
          l(event);
        } catch {
          // A faulty listener must not break the queue or the other listeners.
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    clear: () => listeners.clear(),
  };
}
