/** Exponential backoff with jitter, and an abortable sleep, for retries and status polling. */
import { crispError } from '../../engine/contract/index.js';

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  factor: number;
  /** 0–1: each delay is drawn uniformly from [d·(1−jitter), d]. Spreads many clients' retries apart. */
  jitter: number;
}

export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(policy.maxMs, policy.initialMs * policy.factor ** Math.max(0, attempt));
  return Math.round(base * (1 - policy.jitter * random()));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(crispError('cancelled'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(crispError('cancelled'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
