/**
 * CrispService over `crisp ui`'s HTTP bridge (app/ui/bridgeServer.ts): every method is generated from
 * SERVICE_METHODS as a POST /api/<method>; bytes travel raw (addFile, readImage) instead of as base64;
 * subscribe shares one EventSource among all listeners.
 */
import { SERVICE_METHODS, type CrispService, type QueueSnapshot, type ServiceEvent } from '../../../app/service/crispService.js';

const TOKEN_HEADER = 'x-crisp-token';
const FILE_NAME_HEADER = 'x-crisp-file-name';

export interface HttpServiceOptions {
  /** Origin of the bridge; '' for same-origin (the normal case). */
  baseUrl?: string;
  token: string;
  fetchImpl?: typeof fetch;
  eventSourceFactory?: (url: string) => EventSource;
}

const OFFLINE = 'Lost the connection to "crisp ui". Is it still running?';

async function errorFrom(res: Response): Promise<Error> {
  try {
    const body = (await res.json()) as { error?: unknown };
    if (typeof body.error === 'string') return new Error(body.error);
  } catch {
    // Not JSON: fall through to the status line.
  }
  return new Error(`The request failed (HTTP ${res.status}).`);
}

export function createHttpService(options: HttpServiceOptions): CrispService {
  const base = options.baseUrl ?? '';
  const doFetch = options.fetchImpl ?? ((input: string, init?: RequestInit) => fetch(input, init));
  const headers = { [TOKEN_HEADER]: options.token };

  async function post(method: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      res = await doFetch(`${base}/api/${method}`, { ...init, method: 'POST' });
    } catch {
      throw new Error(OFFLINE);
    }
    if (!res.ok) throw await errorFrom(res);
    return res;
  }

  async function callJson(method: string, args: unknown[]): Promise<unknown> {
    const res = await post(method, {
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ args }),
    });
    const body = (await res.json()) as { result?: unknown };
    return body.result;
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
      if (opened) void callJson('getQueue', []).then((queue) => dispatch({ type: 'queue', queue: queue as QueueSnapshot }), () => undefined);
      opened = true;
    };
  };

  const generated = Object.fromEntries(SERVICE_METHODS.map((m) => [m, (...args: unknown[]) => callJson(m, args)]));

  // The generated methods carry the right names and arity; their types are CrispService's by construction.
  const service = generated as unknown as CrispService;
  return {
    ...service,
    async addFile(name, bytes) {
      const res = await post('addFile', {
        headers: { ...headers, 'content-type': 'application/octet-stream', [FILE_NAME_HEADER]: encodeURIComponent(name) },
        // Uint8Array is a valid body; the cast only bridges DOM and Node typings of RequestInit.
        body: bytes as unknown as NonNullable<RequestInit['body']>,
      });
      return ((await res.json()) as { result: Awaited<ReturnType<CrispService['addFile']>> }).result;
    },
    async readImage(id, which) {
      const res = await post('readImage', {
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ args: [id, which] }),
      });
      const mime = res.headers.get('content-type') ?? 'application/octet-stream';
      return { mime, bytes: new Uint8Array(await res.arrayBuffer()) };
    },
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
  };
}
