-- Gator's transactional outbox, schema version 1 (docs/wire-format.md, "The outbox table").
-- Plain SQL that may run more than once: `gator::outbox::migrate(&pool)` runs it under an
-- advisory lock, and an app that keeps its own migrations can copy this file into its
-- `sqlx::migrate!` folder instead.

-- One row per job enqueued in a transaction: visible to the relay once that transaction
-- commits, deleted once Redis has the job, or kept with `dead_at` and `reason` if Redis never
-- will take it.
CREATE TABLE IF NOT EXISTS gator_outbox (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    jid        TEXT NOT NULL,
    queue      TEXT NOT NULL,
    job        TEXT NOT NULL,
    payload    TEXT NOT NULL,
    options    TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    dead_at    TIMESTAMPTZ,
    reason     TEXT
);

-- The relay's scan: waiting rows in id order (a partial index: dead rows are not in it).
CREATE INDEX IF NOT EXISTS gator_outbox_waiting ON gator_outbox (id) WHERE dead_at IS NULL;

-- The dead rows, newest first, for `gator-worker outbox dead`.
CREATE INDEX IF NOT EXISTS gator_outbox_dead ON gator_outbox (dead_at) WHERE dead_at IS NOT NULL;

-- One NOTIFY per inserting statement, delivered at commit (and folded into one per
-- transaction): the relays LISTEN on `gator_outbox` and wake at once.
CREATE OR REPLACE FUNCTION gator_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gator_outbox', '');
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS gator_outbox_notify ON gator_outbox;
CREATE TRIGGER gator_outbox_notify AFTER INSERT ON gator_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION gator_outbox_notify();

COMMENT ON TABLE gator_outbox IS 'gator outbox, schema 1';
