-- The log's size on MySQL and MariaDB: migration 20261127000003
-- (migrations.go, logschema.go). Statements are separated by blank lines.

-- The log's size is the number of its leaves, the last leaf's idx + 1,
-- read from log_leaves' primary key (leaves.go, log.go): no row of its
-- own, which every writer of events changed under the event order lock.
DROP TABLE IF EXISTS log_state
