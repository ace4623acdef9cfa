/**
 * CrispService over `crisp ui`'s HTTP bridge (app/ui/bridgeServer.ts), generated from the method table:
 * every method is a POST /api/<method>; the table's wire form says how bytes travel (raw request body for
 * `bytesIn`, raw response body for `bytesOut`) instead of as base64; subscribe shares one EventSource
 * among all listeners. Beyond the service, the bridge signs download links (`downloadLink`).
 */
import type { CrispService, QueueSnapshot, ServiceEvent } from '../../../app/service/crispService.js';
import { SERVICE_METHODS, SERVICE_TABLE, type ServiceMethod } from '../../../app/service/methodTable.js';

const TOKEN_HEADER = 'x-crisp-token';
const FILE_NAME_HEADER = 'x-crisp-file-name';

export interface HttpServiceOptions {
  /** Origin of the bridge; '' for same-origin (the normal case). */
  baseUrl?: string;
  token: string;
  fetchImpl?: typeof fetch;
  eventSourceFactory?: (url: string) => EventSource;
}

/** What only the browser UI has: results leave through signed same-origin download links. */
export interface BrowserHost {
  /** A link that downloads one result (one id) or a zip of several; valid for a few minutes. */
  downloadLink(ids: string[]): Promise<string>;
}

const OFFLINE = 'Lost the connection to "crisp ui". Is it still running?';

async function errorFrom(res: Response): Promise<Error> {
  try {
    const body = (await res.json()) as { error?: unknown; code?: unknown };
    // The code (app/jobs/userErrors.ts) lets the page word known failures in its language (i18n/errorText.ts).
    if (typeof body.error === 'string')
      return Object.assign(new Error(body.error), typeof body.code === 'string' ? { code: body.code } : {});
  } catch {
    // Not JSON: fall through to the status line.
  }
  return new Error(`The request failed (HTTP ${res.status}).`);
}

export function createHttpService(options: HttpServiceOptions): CrispService & BrowserHost {
  const base = options.baseUrl ?? '';
  const doFetch = options.fetchImpl ?? ((input: string, init?: RequestInit) => fetch(input, init));
  const headers = { [TOKEN_HEADER]: options.token };

  async function post(path: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      res = await doFetch(`${base}${path}`, { ...init, method: 'POST' });
    } catch {
      throw new Error(OFFLINE);
    }
    if (!res.ok) throw await errorFrom(res);
    return res;
  }

  const jsonInit = (args: unknown[]): RequestInit => ({
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ args }),
  });

  /** One method call, shaped by its wire form. */
  async function call(method: ServiceMethod, args: unknown[]): Promise<unknown> {
    const wire = SERVICE_TABLE[method].wire;
    if (wire === 'bytesIn') {
      const [name, bytes] = args as [string, Uint8Array];
      const res = await post(`/api/${method}`, {
        headers: {
          ...headers,
          'content-type': 'application/octet-stream',
          [FILE_NAME_HEADER]: encodeURIComponent(name),
        },
        // Uint8Array is a valid body; the cast only bridges DOM and Node typings of RequestInit.
        body: bytes as unknown as NonNullable<RequestInit['body']>,
      });
      return ((await res.json()) as { result?: unknown }).result;
    }
    const res = await post(`/api/${method}`, jsonInit(args));
    if (wire === 'bytesOut')
      return {
        mime: res.headers.get('content-type') ?? 'application/octet-stream',
        bytes: new Uint8Array(await res.arrayBuffer()),
      };
    return ((await res.json()) as { result?: unknown }).result;
  }

  const listeners = new Set<(event: ServiceEvent) => void>();
  let source: EventSource | null = null;
  const openSource = () => {
    const url = `${base}/api/events?token=${encodeURIComponent(options.token)}`;
    source = options.eventSourceFactory ? options.eventSourceFactory(url) : new EventSource(url);
    const dispatch = (event: ServiceEvent) => {
      for (const l of [...listeners]) l(event);
    };
    source.onmessage = (message: { data: string }) => {
      try {
        dispatch(JSON.parse(message.data) as ServiceEvent);
      } catch {
        // A malformed message is dropped; the next snapshot corrects the view.
      }
    };
    // EventSource reconnects by itself; events missed while it was away are replaced by a fresh snapshot.
    let opened = false;
    source.onopen = () => {
      if (opened)
        void call('getQueue', []).then(
          (queue) => dispatch({ type: 'queue', queue: queue as QueueSnapshot }),
          () => undefined,
        );
      opened = true;
    };
  };

  const generated = Object.fromEntries(SERVICE_METHODS.map((m) => [m, (...args: unknown[]) => call(m, args)]));
  // The generated methods carry the table's names; their types are CrispService's by construction.
  const methods = generated as unknown as Omit<CrispService, 'subscribe'>;
  return {
    ...methods,
    subscribe(listener) {
      listeners.add(listener);
      if (!source) openSource();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && source) {
          source.close();
          source = null;
        }
      };
    },
    async downloadLink(ids) {
      const res = await post('/links/download', {
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ ids }),
      });
      return `${base}${((await res.json()) as { url: string }).url}`;
    },
  };
}
