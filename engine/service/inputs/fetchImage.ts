/**
 * Fetches a start-task `urls` entry on the server's behalf, which makes it an SSRF surface. Defences:
 * - only http(s); at most `maxRedirects` redirects, followed by hand so every hop is re-checked;
 * - the host's addresses are checked inside the socket's own DNS lookup and the socket connects to
 *   exactly the checked address, so a name that re-resolves to 127.0.0.1 later (DNS rebinding) gains
 *   nothing; IP-literal hosts, which skip DNS, are checked up front;
 * - a deadline for the whole fetch, a byte cap enforced while streaming to the target file (Content-Length
 *   is not trusted; the body is never held in memory), and the body must start with JPG/PNG/WEBP magic bytes.
 * Refusals are bad-request CrispErrors (400) whose message names the URL (without its query, which may hold the
 * client's own credentials) and the reason.
 *
 * The client is Node's own `http`/`https`, one connection per request (no pooling), not undici: undici 7's
 * HTTP/1 parser throws an uncatchable AssertionError from its socket 'end' handler when a server sends
 * Content-Length, the body and FIN while the response body is paused under backpressure (nodejs/undici#5360,
 * fixed only in undici 8, which needs Node ≥ 22.19 and does not load on the Node 20 we support) — any image
 * host could take the whole process down. Every answer's body is either read to the end or destroyed.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { errors, isContractError, sanitizeFileName, type CrispError } from '../../contract/index.js';
import type { FetchedImage, FetchImageOptions } from './fetchImage.types.js';
import { writeStreamAtomic } from '../storage/atomicFile.js';
import { sniffImageType } from '../../core/pipeline/imageSniff.js';
import { isPrivateAddress } from './ipPolicy.js';
import { holdPoint } from '../../core/testGate.js';

export type { FetchedImage, FetchImageOptions } from './fetchImage.types.js';

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const PRIVATE_CODE = 'ERR_CRISP_PRIVATE_ADDRESS';
/** Enough bytes to tell JPG, PNG and WEBP apart (WEBP needs 12). */
const SNIFF_BYTES = 12;

function shown(u: URL): string {
  return `${u.protocol}//${u.host}${u.pathname}`;
}

function refuse(u: URL, reason: string): CrispError {
  return errors.badRequest(`could not fetch ${shown(u)}: ${reason}`);
}

/** A net.connect lookup that refuses private answers; the socket then uses the very address checked. */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const list = addresses ?? [];
      const blocked = !allowPrivate && list.some((a) => isPrivateAddress(a.address));
      if (blocked || list.length === 0) {
        const e = Object.assign(new Error(`${hostname} resolves to a private or reserved address`), {
          code: PRIVATE_CODE,
        });
        return callback(e, '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      const first = list[0]!;
      return callback(null, first.address, first.family);
    });
  };
}

function causeCodes(e: unknown): string[] {
  const codes: string[] = [];
  let cur: unknown = e;
  for (let i = 0; i < 5 && cur && typeof cur === 'object'; i++) {
    const c = (cur as { code?: unknown }).code;
    if (typeof c === 'string') codes.push(c);
    const errs = (cur as { errors?: unknown }).errors;
    if (Array.isArray(errs)) for (const x of errs) codes.push(...causeCodes(x));
    cur = (cur as { cause?: unknown }).cause;
  }
  return codes;
}

function fileNameFrom(u: URL): string {
  const last = u.pathname.split('/').filter(Boolean).pop() ?? '';
  let decoded = last;
  try {
    decoded = decodeURIComponent(last);
  } catch {
    // keep the raw segment
  }
  return sanitizeFileName(decoded, 'image');
}

/**
 * One GET on a connection of its own (`agent: false`: nothing pooled, the socket ends with the answer). Resolves
 * with the answer's head; its body is the caller's to read to the end or destroy.
 */
function get(u: URL, opts: FetchImageOptions, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, {
      method: 'GET',
      agent: false,
      lookup: guardedLookup(opts.allowPrivate),
      signal,
      // No bytes for this long, whatever the phase (connect, head, body), ends the socket.
      timeout: opts.timeoutMs,
      headers: { accept: 'image/jpeg, image/png, image/webp', 'user-agent': 'Crisp-Server/1' },
    });
    req.once('timeout', () => req.destroy(Object.assign(new Error('no bytes in time'), { code: 'ETIMEDOUT' })));
    req.once('error', reject);
    req.once('response', resolve);
    req.end();
  });
}

/** Fetches `url` into the file `target` (written whole or not at all). */
export async function fetchImage(url: string, target: string, opts: FetchImageOptions): Promise<FetchedImage> {
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw errors.badRequest(`'${url.slice(0, 60)}' is not a URL`);
  }
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([deadline, opts.signal]) : deadline;
  /** The answer whose body is open: read to its end, or destroyed in `finally`. */
  let open: IncomingMessage | undefined;
  try {
    for (let hop = 0; ; hop++) {
      if (current.protocol !== 'http:' && current.protocol !== 'https:')
        throw refuse(current, 'only http and https URLs are fetched');
      const host = current.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) && !opts.allowPrivate && isPrivateAddress(host)) {
        throw refuse(current, 'private, loopback and reserved addresses are refused');
      }
      let res: IncomingMessage;
      try {
        res = await get(current, opts, signal);
      } catch (e) {
        const codes = causeCodes(e);
        if (codes.includes(PRIVATE_CODE))
          throw refuse(current, 'the host resolves to a private, loopback or reserved address');
        if (deadline.aborted || codes.includes('ETIMEDOUT'))
          throw refuse(current, `no answer within ${opts.timeoutMs} ms`);
        if (opts.signal?.aborted) throw refuse(current, 'cancelled');
        if (codes.includes('ENOTFOUND') || codes.includes('EAI_AGAIN'))
          throw refuse(current, 'the host name does not resolve');
        throw refuse(current, `connection failed (${codes[0] ?? 'network error'})`);
      }
      open = res;
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status)) {
        res.destroy();
        const location = res.headers.location;
        if (!location) throw refuse(current, `HTTP ${status} without a Location`);
        if (hop >= opts.maxRedirects) throw refuse(current, `more than ${opts.maxRedirects} redirects`);
        try {
          current = new URL(location, current);
        } catch {
          throw refuse(current, 'redirect to an invalid URL');
        }
        continue;
      }
      if (status !== 200) throw refuse(current, `the server answered HTTP ${status}`);
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > opts.maxBytes)
        throw refuse(current, `the image is larger than the limit of ${opts.maxBytes} bytes`);
      // Streamed to disk (temp file, renamed when whole and checked), never held in memory: memory per
      // fetch is a few stream buffers whatever the image's size.
      let total = 0;
      let head = Buffer.alloc(0);
      let type: string | undefined;
      const notImage = () => refuse(current, 'the content is not a JPG, PNG or WEBP image');
      try {
        // Test-only hold (engine/core/testGate.ts): the head is read, the body not yet — the slowest reader.
        await holdPoint('url-body', signal);
        await writeStreamAtomic(target, res, (chunk) => {
          total += chunk.length;
          if (total > opts.maxBytes)
            throw refuse(current, `the image is larger than the limit of ${opts.maxBytes} bytes`);
          if (type === undefined && head.length < SNIFF_BYTES) {
            head = Buffer.concat([head, chunk]);
            if (head.length >= SNIFF_BYTES) type = sniffImageType(head) ?? undefined;
            if (head.length >= SNIFF_BYTES && !type) throw notImage();
          }
        });
      } catch (e) {
        if (isContractError(e)) throw e;
        if (deadline.aborted) throw refuse(current, `no complete answer within ${opts.timeoutMs} ms`);
        if (opts.signal?.aborted) throw refuse(current, 'cancelled');
        throw refuse(current, 'the download was interrupted');
      }
      // A body cut short (the connection closed before Content-Length bytes) is an error, never an image.
      if (!res.complete) {
        await rm(target, { force: true });
        throw refuse(current, 'the download was interrupted');
      }
      type ??= sniffImageType(head) ?? undefined;
      if (!type) {
        await rm(target, { force: true });
        throw notImage();
      }
      return { originalFileName: fileNameFrom(current), contentType: type, size: total };
    }
  } finally {
    // Whatever ended the fetch, no socket stays open: a body not read to its end is destroyed.
    if (open && !open.destroyed) open.destroy();
  }
}
