/**
 * Test-only: a SigV4 check in front of s3rver. s3rver parses a presigned URL's SigV4 fields but never verifies
 * them (node_modules/s3rver/lib/middleware/authentication.js: "Signature version 4 calculation is
 * unimplemeneted"), so against it a part URL that signs its length (engine/service/storage/s3ObjectStore.ts,
 * presignPart) would accept a PUT of any size. This front does what S3 does with a presigned URL: it recomputes
 * the signature from the request it received — method, path, the query without X-Amz-Signature, and the
 * values it got for the headers X-Amz-SignedHeaders names (content-length among them) — and answers
 * 403 SignatureDoesNotMatch in S3's XML when it differs, before reading the body; otherwise it forwards the
 * request to s3rver. Requests signed in an Authorization header (the SDK's own calls) are forwarded unchecked.
 */
import { createHash, createHmac, type BinaryLike, type Hash, type Hmac } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { S3RequestPresigner } from '@aws-sdk/s3-request-presigner';

export interface SigV4Front {
  /** The endpoint to give the S3 client: its presigned URLs then point here. */
  url: string;
  /** Every request forwarded to the bucket, with the body bytes it carried. */
  forwarded: { method: string; path: string; bytes: number }[];
  /** Every request refused, with its S3 error code. */
  refused: { method: string; path: string; code: string }[];
  close(): Promise<void>;
}

/** What the signer hashes and keys with (@smithy/types SourceData). */
type SourceData = string | ArrayBuffer | ArrayBufferView;
const binary = (d: SourceData): BinaryLike =>
  typeof d === 'string'
    ? d
    : d instanceof ArrayBuffer
      ? new Uint8Array(d)
      : new Uint8Array(d.buffer, d.byteOffset, d.byteLength);

/** SHA-256 (an HMAC when given a key) in the shape the signer takes (@smithy/types Checksum), on node:crypto. */
class Sha256 {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', binary(this.secret));
  }
  update(data: SourceData): void {
    this.hash.update(binary(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

type PresignInput = Parameters<S3RequestPresigner['presign']>[0];

/** "20261127T113400Z" → its Date (SigV4's basic ISO 8601). */
function amzDate(text: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) : undefined;
}

function s3Error(res: ServerResponse, code: string, message: string): void {
  const xml =
    '<?xml version="1.0" encoding="UTF-8"?>\n' + `<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  res.writeHead(403, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(xml) }).end(xml);
}

/**
 * The S3 error code that refuses this presigned request, or undefined when its signature is the one the
 * credentials give for what was received.
 */
async function refusal(
  req: IncomingMessage,
  credentials: { accessKeyId: string; secretAccessKey: string },
): Promise<{ code: string; message: string } | undefined> {
  const raw = req.url ?? '/';
  const q = new URL(raw, 'http://front').searchParams;
  const given = q.get('X-Amz-Signature');
  if (given === null) return undefined;
  const [accessKeyId, , region] = (q.get('X-Amz-Credential') ?? '').split('/');
  const signingDate = amzDate(q.get('X-Amz-Date') ?? '');
  const expiresIn = Number(q.get('X-Amz-Expires'));
  const signed = (q.get('X-Amz-SignedHeaders') ?? '').split(';').filter(Boolean);
  if (accessKeyId !== credentials.accessKeyId)
    return {
      code: 'InvalidAccessKeyId',
      message: 'The AWS Access Key Id you provided does not exist in our records.',
    };
  if (!signingDate || !Number.isInteger(expiresIn) || !region || signed.length === 0)
    return { code: 'AuthorizationQueryParametersError', message: 'Query-string authentication is malformed.' };
  if (Date.now() > signingDate.getTime() + expiresIn * 1000)
    return { code: 'AccessDenied', message: 'Request has expired' };

  const query: Record<string, string> = {};
  for (const [k, v] of q) if (k !== 'X-Amz-Signature') query[k] = v;
  // Only the headers the URL says it signed, with the values this request carries (absent: not signed).
  const headers: Record<string, string> = {};
  for (const name of signed) {
    const v = req.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  const [host, port] = (req.headers.host ?? '').split(':');
  const request: PresignInput = {
    method: req.method ?? 'GET',
    protocol: 'http:',
    hostname: host ?? '',
    ...(port ? { port: Number(port) } : {}),
    // The path as sent (still percent-encoded), which is what the client signed.
    path: raw.split('?')[0]!,
    query,
    headers,
  };
  const presigner = new S3RequestPresigner({ credentials, region, sha256: Sha256, service: 's3' });
  const again = await presigner.presign(request, { signingDate, expiresIn, signableHeaders: new Set(signed) });
  if (again.query?.['X-Amz-Signature'] === given) return undefined;
  return {
    code: 'SignatureDoesNotMatch',
    message:
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
  };
}

/** Starts the front on loopback before the bucket at `upstream` (an http:// origin). */
export async function startSigV4Front(
  upstream: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
): Promise<SigV4Front> {
  const target = new URL(upstream);
  const forwarded: SigV4Front['forwarded'] = [];
  const refused: SigV4Front['refused'] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const method = req.method ?? 'GET';
      const path = (req.url ?? '/').split('?')[0]!;
      const no = await refusal(req, credentials);
      if (no) {
        refused.push({ method, path, code: no.code });
        // Refused before any of the body is read; the rest is read and dropped, never forwarded.
        req.resume();
        s3Error(res, no.code, no.message);
        return;
      }
      const entry = { method, path, bytes: 0 };
      forwarded.push(entry);
      req.on('data', (c: Buffer) => (entry.bytes += c.length));
      const out = httpRequest(
        { host: target.hostname, port: target.port, method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', () => res.destroy());
      req.pipe(out);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwarded,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
