-- The log's size on PostgreSQL: migration 20261127000003
-- (migrations.go, logschema.go). Statements are separated by blank lines.

-- The log's size is the number of its leaves, the last leaf's idx + 1,
-- read from log_leaves' primary key (leaves.go, log.go): no row of its
-- own, which every writer of events changed under the event order lock.
DROP TABLE IF EXISTS log_state

-- The log's size as the holder of the event order lock sees it: the
-- latest committed leaves, read with a snapshot of its own (a volatile
-- function takes one per statement), not the snapshot of the statement
-- that calls it, which may predate the lock (leaves.go). The table is
-- found on the writer's search_path.
CREATE OR REPLACE FUNCTION flagadmin_log_size() RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
	BEGIN
		RETURN (SELECT COALESCE(MAX(idx) + 1, 0) FROM log_leaves);
	END $$
