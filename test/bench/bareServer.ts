/**
 * The server bench's baseline: a bare Node `http` server doing the minimum the two hot paths need.
 *   POST /get-task-status            reads the body, answers a fixed ~700-byte JSON status
 *   PUT  /uploads/<id>/parts/<n>     writes the body to a file while hashing it (MD5), answers the ETag
 *   POST /complete-multipart-upload  answers success (the parts are not assembled)
 * Run as its own process (`node --import tsx test/bench/bareServer.ts <dir>`); prints its URL on stdout.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

const dir = process.argv[2] ?? '.';
await mkdir(dir, { recursive: true });

const file = {
  fileName: 'butterfly_digital-art-4x_x1.png',
  fileType: 'image/png',
  fileSize: 67_328,
  dimensions: { width: 256, height: 256 },
  expiresAt: 1_790_000_000_000,
  downloadLink:
    'http://127.0.0.1:8787/downloads/7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b/butterfly_digital-art-4x_x1.png?user=usr_0123456789abcdef&expires=1790000000000&signature=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE',
};
const STATUS = Buffer.from(
  JSON.stringify({
    data: {
      status: 'PROCESSED',
      progress: '100%',
      files: [file],
      deductedCredits: 1,
      creditsDeducted: true,
      model: 'digital-art-4x',
      scale: 1,
      saveImageAs: 'png',
      compression: 0,
      batchMode: false,
      warnings: ['Face enhancement is not available in this version yet.'],
    },
  }),
);

let seq = 0;
const server = createServer((req, res) => {
  if (req.method === 'PUT') {
    const hash = createHash('md5');
    const target = path.join(dir, `part-${process.pid}-${seq++}`);
    req.on('data', (c: Buffer) => hash.update(c));
    pipeline(req, createWriteStream(target)).then(
      () => {
        const etag = `"${hash.digest('hex')}"`;
        res.writeHead(200, { 'content-type': 'application/json', etag }).end(JSON.stringify({ data: { ETag: etag } }));
      },
      () => res.writeHead(500).end(),
    );
    return;
  }
  req.resume();
  req.on('end', () => {
    if (req.url === '/get-task-status')
      res
        .writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': STATUS.length })
        .end(STATUS);
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{"status":"success"}}');
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`bare: listening on http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
