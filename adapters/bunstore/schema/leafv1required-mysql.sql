-- Leaf format v1 required on MySQL and MariaDB: migration 20261202000002
-- (migrations.go, leafv1required.go). A flagadmin older than leaf format
-- v1 writes events without a salt and leaves without their tombstone;
-- with these columns NOT NULL (and without a default) its writes fail, in
-- strict mode, instead of breaking the log. Each statement gives the
-- column the type it has, so the migration may run again.

ALTER TABLE events MODIFY COLUMN salt VARBINARY(16) NOT NULL

ALTER TABLE log_leaves MODIFY COLUMN created_at BIGINT NOT NULL, MODIFY COLUMN type VARCHAR(255) NOT NULL, MODIFY COLUMN content BINARY(32) NOT NULL
