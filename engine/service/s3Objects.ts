/**
 * Task files in a bucket (`--storage s3://bucket/prefix`): uploads are real S3 multipart uploads with
 * presigned part URLs (sessions counted in PostgreSQL for the quotas); the API process that accepts a task
 * puts its inputs in the bucket, the worker that claims it stages them on its own disk and publishes the
 * outputs before the task becomes PROCESSED, and downloads redirect to short-lived presigned URLs. The data
 * directory then holds only this process's working copies. Used by the PostgreSQL deployment: a bucket is
 * for several processes, which meet in the database.
 */
import { rm } from 'node:fs/promises';
import type { Pool } from './db/postgres.js';
import type { EngineContext, TaskFiles } from './engine.js';
import type { ObjectStore } from './storage/objectStore.js';
import { publishInputs, publishOutputs, stageInputs, sweepOrphanTasks, taskPrefix } from './tasks/taskObjects.js';
import type { TaskStore } from './tasks/taskStore.js';
import { PgUploadIndex } from './uploads/pgUploadIndex.js';
import { S3UploadStore } from './uploads/s3UploadStore.js';

export function s3Objects(ctx: EngineContext, objects: ObjectStore, store: TaskStore, pool: Pool): TaskFiles {
  const dropLocalCopy = (taskId: string) => rm(store.taskDir(taskId), { recursive: true, force: true });
  return {
    uploads: new S3UploadStore(objects, ctx.limits, ctx.now, new PgUploadIndex(pool)),
    runnerHooks: {
      stageInputs: (task) => stageInputs(objects, store, task),
      publishOutputs: (task) => publishOutputs(objects, store, task),
      // The local folder was only a working copy.
      onEnded: (task) => void dropLocalCopy(task.id).catch(() => undefined),
    },
    // Whichever worker claims the task reads its inputs from the bucket.
    publishInputs: (taskId, inputs) => publishInputs(objects, taskId, inputs),
    inserted: (task) => dropLocalCopy(task.id),
    remove: (taskId) => objects.removePrefix(taskPrefix(taskId)),
    sweepOrphans: (isKnown, cutoff) => sweepOrphanTasks(objects, isKnown, cutoff),
    async locate(file) {
      if (!(await objects.head(file.path))) return undefined;
      // Short-lived: the download link (ours, checked by the caller) is what the user holds; this only carries the bytes.
      const redirect = await objects.presignGet(file.path, {
        fileName: file.fileName,
        contentType: file.fileType,
        expiresInSeconds: 300,
      });
      return { path: file.path, redirect };
    },
  };
}
