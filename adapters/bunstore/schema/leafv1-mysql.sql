-- Leaf format v1 of the verifiable log on MySQL and MariaDB: migration
-- 20261202000001 (migrations.go, leafv1.go). Each statement adds one
-- column and is skipped when the column exists, so the migration may run
-- again. The columns are NULL for rows written before it, which the
-- migration then fills (it rebuilds the log's leaves).

-- The event's salt: 16 random bytes drawn when it is written, which its
-- leaf commits to (flagadmin.LeafHash). Read back only for the log.
ALTER TABLE events ADD COLUMN salt VARBINARY(16) NULL

-- What a leaf commits to apart from the rest of its event, kept when the
-- event is pruned (a tombstone), so that its hash can be recomputed
-- (flagadmin.LeafOf): the event's time (Unix milliseconds), project and
-- type, and its content commitment (flagadmin.ContentCommitment).
ALTER TABLE log_leaves ADD COLUMN created_at BIGINT NULL

ALTER TABLE log_leaves ADD COLUMN project VARCHAR(700) NULL

ALTER TABLE log_leaves ADD COLUMN type VARCHAR(255) NULL

ALTER TABLE log_leaves ADD COLUMN content BINARY(32) NULL
