-- The verifiable log and its retention on MySQL and MariaDB: migration
-- 20261127000001 (migrations.go, log.go). Statements are separated by
-- blank lines; {collation} as in mysql.sql.

-- The leaves of the log's tree: leaf idx (from 0) is the idx-th event in
-- id order; hash is its flagadmin.LeafHash. Appended with the events, in
-- their transaction, under the event order lock (record.go); never
-- removed: pruning marks them.
CREATE TABLE IF NOT EXISTS log_leaves (
	idx BIGINT NOT NULL PRIMARY KEY,
	event_id BIGINT NOT NULL,
	hash BINARY(32) NOT NULL,
	pruned BOOLEAN NOT NULL DEFAULT FALSE,
	UNIQUE INDEX log_leaves_event (event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The log's size, the number of leaves: one row, changed only by the
-- holder of the event order lock (record.go), which appends the leaves.
-- Dropped by migration 20261127000003 (schema/logsize-*.sql): the size
-- is read from log_leaves since.
CREATE TABLE IF NOT EXISTS log_state (
	id SMALLINT NOT NULL PRIMARY KEY,
	size BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

INSERT IGNORE INTO log_state (id, size) VALUES (1, 0)

-- The stored hashes of the tree's perfect subtrees, by level (1 and up),
-- consecutive from idx 0: they only speed proofs up (adapters/tlog).
CREATE TABLE IF NOT EXISTS log_hashes (
	level SMALLINT NOT NULL,
	idx BIGINT NOT NULL,
	hash BINARY(32) NOT NULL,
	PRIMARY KEY (level, idx)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The signed checkpoints, one per tree size.
CREATE TABLE IF NOT EXISTS log_checkpoints (
	size BIGINT NOT NULL PRIMARY KEY,
	root BINARY(32) NOT NULL,
	note BLOB NOT NULL,
	signed_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The legal holds: the events of a held project are never pruned. The
-- project is as long as an event's.
CREATE TABLE IF NOT EXISTS log_holds (
	project VARCHAR(700) NOT NULL PRIMARY KEY,
	since BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The prune lock: one row, locked by a transaction that prunes and by one
-- that places a hold, so that a hold is never placed while a prune that
-- did not see it runs.
CREATE TABLE IF NOT EXISTS log_prune (
	id SMALLINT NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

INSERT IGNORE INTO log_prune (id) VALUES (1)
