/**
 * GET of a download link. The signature proves the link was issued for this user, task and file; an
 * X-API-Key, when sent, must belong to that same user. Every refusal after the signature check is a
 * 404 "File not found", so a foreign key learns nothing about whether the file exists.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { AccountStore } from '../../service/accounts/accountStore.js';
import type { UpscalingEngine } from '../../service/api.js';
import { errors } from '../../contract/index.js';
import { apiKeyOf } from '../auth.js';
import type { DownloadLinks } from '../downloadLinks.js';

export function registerDownloadRoutes(
  app: FastifyInstance,
  engine: UpscalingEngine,
  accounts: AccountStore,
  links: DownloadLinks,
): void {
  app.get('/downloads/:taskId/:fileName', async (request, reply) => {
    const v = links.verify(request.url);
    if (!v.ok)
      throw errors.forbidden(
        v.reason === 'expired' ? 'this download link has expired' : 'the download link signature is invalid',
      );
    const { userId, taskId, fileName } = v.target;
    const key = apiKeyOf(request);
    if (key) {
      const presenter = await accounts.authenticate(key);
      if (!presenter || presenter.userId !== userId) throw errors.notFound('File not found');
    }
    const owner = await accounts.getUser(userId);
    if (!owner) throw errors.notFound('File not found');
    const out = await engine.openOutput({ userId: owner.userId, email: owner.email }, taskId, fileName);
    // Object storage: the bucket serves the bytes; the redirect's presigned URL lives minutes, the link hours.
    if (out.redirect) return reply.header('cache-control', 'no-store').redirect(out.redirect, 302);
    const st = await stat(out.path);
    reply
      .type(out.file.fileType)
      .header('content-length', String(st.size))
      .header('content-disposition', `attachment; filename="${out.file.fileName.replace(/[^\w.-]/g, '_')}"`)
      .header('cache-control', 'private, max-age=300');
    return reply.send(createReadStream(out.path));
  });
}
