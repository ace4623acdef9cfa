/**
 * The PostgreSQL schema, as an ordered list of migrations. A migration is never edited once released:
 * a change is a new entry with the next version. `migrate` applies the missing ones at start, each in
 * its own transaction, under an advisory lock so two processes starting together do not race.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts and charges',
    sql: `
      CREATE TABLE users (
        user_id       text PRIMARY KEY,
        email         text NOT NULL UNIQUE,
        key_hash      text NOT NULL UNIQUE,
        credits       bigint NOT NULL CHECK (credits >= 0),
        extra_credits bigint NOT NULL CHECK (extra_credits >= 0),
        created_at    bigint NOT NULL
      );
      -- One row per task: reserved at start-task, then settled (deducted) or released, exactly once.
      CREATE TABLE charges (
        task_id    text PRIMARY KEY,
        user_id    text NOT NULL REFERENCES users (user_id),
        cost       bigint NOT NULL CHECK (cost >= 0),
        state      text NOT NULL CHECK (state IN ('reserved', 'settled', 'released')),
        deducted   bigint NOT NULL DEFAULT 0,
        created_at bigint NOT NULL,
        ended_at   bigint
      );
      -- available = balance − open reservations: this index keeps that sum cheap.
      CREATE INDEX charges_open_by_user ON charges (user_id) WHERE state = 'reserved';
    `,
  },
  {
    version: 2,
    name: 'shared rate-limit windows',
    sql: `
      -- One fixed window per limiter key (a key digest or a client address), shared by every server process.
      CREATE TABLE rate_limits (
        key          text PRIMARY KEY,
        window_start bigint NOT NULL,
        hits         integer NOT NULL
      );
      CREATE INDEX rate_limits_by_window ON rate_limits (window_start);
    `,
  },
  {
    version: 3,
    name: 'tasks as queued jobs',
    sql: `
      -- A task row is also its job: PROCESSING/ENHANCING rows with no live lease are runnable. A worker
      -- claims one with FOR UPDATE SKIP LOCKED and holds it by pushing locked_until forward (the lease);
      -- a worker that dies stops doing so, and the row is claimable again once the lease runs out.
      -- Lease times use the database clock, so workers on machines with skewed clocks still agree.
      CREATE TABLE tasks (
        task_id      text PRIMARY KEY,
        user_id      text NOT NULL,
        status       text NOT NULL,
        record       jsonb NOT NULL,
        attempts     integer NOT NULL DEFAULT 0,
        locked_by    text,
        locked_until timestamptz,
        created_at   bigint NOT NULL,
        updated_at   bigint NOT NULL
      );
      CREATE INDEX tasks_runnable ON tasks (created_at) WHERE status IN ('PROCESSING', 'ENHANCING');
      CREATE INDEX tasks_by_user ON tasks (user_id);
    `,
  },
  {
    version: 4,
    name: 'shared secrets',
    sql: `
      -- Secrets every process must agree on (the key that signs download links) when there is no shared
      -- directory to keep them in (--storage s3://…). The first process inserts, every other one reads it.
      CREATE TABLE secrets (
        name  text PRIMARY KEY,
        value text NOT NULL
      );
    `,
  },
  {
    version: 5,
    name: 'upload sessions in a bucket',
    sql: `
      -- With --storage s3://… the upload sessions are objects in the bucket; this index of them lets
      -- get-upload-url count a user's open sessions and stored bytes (the quotas) without listing the bucket.
      CREATE TABLE upload_sessions (
        upload_id  text PRIMARY KEY,
        user_id    text NOT NULL,
        file_size  bigint NOT NULL,
        expires_at bigint NOT NULL,
        completed  boolean NOT NULL DEFAULT false
      );
      CREATE INDEX upload_sessions_by_user ON upload_sessions (user_id, expires_at);
    `,
  },
];
