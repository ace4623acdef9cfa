/** Hand-made HTTP for the abuse tests: multipart bodies streamed (never held), truncated or trickled. */
import http from 'node:http';
import net from 'node:net';

export const BOUNDARY = 'crispAbuseBoundary7MA4YWxkTrZu0gW';

export interface RawAnswer {
  status: number;
  text: string;
  /** Body bytes written before the answer came (or the socket closed). */
  sent: number;
}

export interface StreamedPart {
  name: string;
  fileName: string;
  /** First bytes (e.g. a PNG signature); the rest are zeros. */
  head: Buffer;
  size: number;
}

const fieldPart = (k: string, v: string) =>
  Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
const filePartHeader = (p: StreamedPart) =>
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
const CLOSE = Buffer.from(`--${BOUNDARY}--\r\n`);

/** Streams a multipart start-task whose file parts are generated chunk by chunk; stops writing once answered. */
export function streamForm(
  base: string,
  key: string,
  fields: Record<string, string>,
  parts: StreamedPart[],
  opts: { declareLength?: boolean } = {},
): Promise<RawAnswer> {
  const pre = Buffer.concat(Object.entries(fields).map(([k, v]) => fieldPart(k, v)));
  const total = pre.length + parts.reduce((a, p) => a + filePartHeader(p).length + p.size + 2, 0) + CLOSE.length;
  const zeros = Buffer.alloc(1024 * 1024);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered: RawAnswer | undefined;
    let stop = false;
    const req = http.request(`${base}/start-task`, {
      method: 'POST',
      // Chunked by default: a declared length over the server's cap is refused before the body, which
      // would not exercise the streaming path.
      headers: {
        'x-api-key': key,
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        ...(opts.declareLength ? { 'content-length': String(total) } : {}),
      },
    });
    const wake: (() => void)[] = [];
    const halt = () => {
      stop = true;
      for (const w of wake.splice(0)) w();
    };
    req.on('response', (res) => {
      halt();
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        answered = { status: res.statusCode ?? 0, text, sent };
        resolve(answered);
        req.destroy();
      });
    });
    req.on('error', (e) => {
      halt();
      if (!answered)
        setTimeout(
          () => (answered ? undefined : reject(new Error(`no answer after ${sent} bytes: ${e.message}`))),
          500,
        );
    });
    req.on('close', halt);
    const write = async (chunk: Buffer) => {
      if (stop) return;
      sent += chunk.length;
      if (!req.write(chunk)) await new Promise<void>((r) => (wake.push(r), req.once('drain', r)));
    };
    void (async () => {
      await write(pre);
      for (const p of parts) {
        await write(filePartHeader(p));
        await write(p.head);
        for (let left = p.size - p.head.length; left > 0 && !stop; left -= zeros.length)
          await write(zeros.subarray(0, Math.min(left, zeros.length)));
        await write(Buffer.from('\r\n'));
      }
      await write(CLOSE);
      if (!stop) req.end();
    })();
  });
}

/** Sends `body` exactly as given (Content-Length = its length) and reads the answer. */
export function rawPost(base: string, path: string, headers: Record<string, string>, body: Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, sent: body.length }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export function multipartBody(
  fields: Record<string, string>,
  files: { name: string; fileName: string; bytes: Buffer }[],
): Buffer {
  return Buffer.concat([
    ...Object.entries(fields).map(([k, v]) => fieldPart(k, v)),
    ...files.flatMap((f) => [
      filePartHeader({ name: f.name, fileName: f.fileName, head: f.bytes, size: f.bytes.length }),
      f.bytes,
      Buffer.from('\r\n'),
    ]),
    CLOSE,
  ]);
}

export interface TrickleResult {
  /** Whether the server closed the connection. */
  closed: boolean;
  /** Milliseconds from the first byte to the close. */
  closedAfterMs: number;
  bytesSent: number;
  response: string;
}

/**
 * Opens a raw connection and sends `head` then one byte of `body` per `everyMs`, until the server
 * closes the connection or `giveUpMs` pass.
 */
export function trickle(
  base: string,
  head: string,
  body: Buffer,
  everyMs: number,
  giveUpMs: number,
  localAddress?: string,
): Promise<TrickleResult> {
  const u = new URL(base);
  return new Promise((resolve) => {
    const t0 = Date.now();
    let sent = 0;
    let response = '';
    let timer: NodeJS.Timeout | undefined;
    const socket = net.connect(
      { host: u.hostname, port: Number(u.port), ...(localAddress ? { localAddress } : {}) },
      () => {
        socket.write(head);
        timer = setInterval(() => {
          if (sent < body.length && !socket.destroyed) socket.write(body.subarray(sent, ++sent));
        }, everyMs);
      },
    );
    const giveUp = setTimeout(() => finish(false), giveUpMs);
    const finish = (closed: boolean) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ closed, closedAfterMs: Date.now() - t0, bytesSent: sent, response });
    };
    socket.on('data', (d: Buffer) => (response += d.toString()));
    socket.on('close', () => finish(true));
    socket.on('error', () => undefined);
  });
}

/**
 * Opens a raw connection and sends `head`, which must ask `Expect: 100-continue`; resolves once the server
 * answers "100 Continue", i.e. it has read the request and is waiting for its body, so the connection is
 * known to be busy. The body is never sent; the caller destroys the socket.
 */
export function heldRequest(base: string, head: string, localAddress?: string): Promise<net.Socket> {
  if (!/^expect: 100-continue\r$/im.test(head)) throw new Error('heldRequest: head must ask Expect: 100-continue');
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = net.connect(
      { host: u.hostname, port: Number(u.port), ...(localAddress ? { localAddress } : {}) },
      () => socket.write(head),
    );
    socket.on('data', (d: Buffer) => {
      text += d.toString();
      if (text.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) resolve(socket);
      else if (text.includes('\r\n\r\n')) reject(new Error(`heldRequest: answered ${text.split('\r\n')[0]}`));
    });
    socket.on('close', () => reject(new Error('heldRequest: closed before 100 Continue')));
    socket.on('error', () => undefined);
  });
}
