/**
 * An index of the upload sessions kept in a bucket (`--storage s3://…`, which requires `--db`), so the
 * per-user upload quotas (open sessions, stored bytes) are one indexed query instead of a bucket listing.
 * The bucket's session.json stays the record that decides; this only counts.
 */
import type { Pool } from '../db/postgres.js';
import type { UploadUsage } from '../quotas/uploadUsage.js';

export class PgUploadIndex {
  constructor(private readonly pool: Pool) {}

  async add(uploadId: string, userId: string, fileSize: number, expiresAt: number): Promise<void> {
    await this.pool.query(
      'INSERT INTO upload_sessions (upload_id, user_id, file_size, expires_at) VALUES ($1, $2, $3, $4)',
      [uploadId, userId, fileSize, expiresAt],
    );
  }

  async completed(uploadId: string, expiresAt: number): Promise<void> {
    await this.pool.query('UPDATE upload_sessions SET completed = true, expires_at = $2 WHERE upload_id = $1', [
      uploadId,
      expiresAt,
    ]);
  }

  async remove(uploadId: string): Promise<void> {
    await this.pool.query('DELETE FROM upload_sessions WHERE upload_id = $1', [uploadId]);
  }

  /** Same rule as uploadUsageOf (quotas/uploadUsage.ts): unexpired sessions; open = not completed. */
  async usageOf(userId: string, now: number): Promise<UploadUsage> {
    const { rows } = await this.pool.query<UploadUsage>(
      `SELECT count(*) FILTER (WHERE NOT completed)::int AS "openUploads", coalesce(sum(file_size), 0)::float8 AS bytes
       FROM upload_sessions WHERE user_id = $1 AND expires_at >= $2`,
      [userId, now],
    );
    return rows[0] ?? { openUploads: 0, bytes: 0 };
  }
}
