-- Leaf format v1 required on PostgreSQL: migration 20261202000002
-- (migrations.go, leafv1required.go). A flagadmin older than leaf format
-- v1 writes events without a salt and leaves without their tombstone;
-- with these columns NOT NULL its writes fail instead of breaking the log.
-- SET NOT NULL does nothing on a column that is NOT NULL already, so the
-- migration may run again.

ALTER TABLE events ALTER COLUMN salt SET NOT NULL

ALTER TABLE log_leaves ALTER COLUMN created_at SET NOT NULL

ALTER TABLE log_leaves ALTER COLUMN type SET NOT NULL

ALTER TABLE log_leaves ALTER COLUMN content SET NOT NULL
