-- The verifiable log and its retention on SQLite: migration
-- 20261127000001 (migrations.go, log.go). Statements are separated by
-- blank lines.

-- The leaves of the log's tree: leaf idx (from 0) is the idx-th event in
-- id order; hash is its flagadmin.LeafHash. Appended with the events, in
-- their transaction, under the event order lock (record.go); never
-- removed: pruning marks them.
CREATE TABLE IF NOT EXISTS log_leaves (
	idx BIGINT NOT NULL PRIMARY KEY,
	event_id BIGINT NOT NULL,
	hash BLOB NOT NULL,
	pruned BOOLEAN NOT NULL DEFAULT FALSE
)

CREATE UNIQUE INDEX IF NOT EXISTS log_leaves_event ON log_leaves (event_id)

-- The log's size, the number of leaves: one row, changed only by the
-- holder of the event order lock (record.go), which appends the leaves.
-- Dropped by migration 20261127000003 (schema/logsize-*.sql): the size
-- is read from log_leaves since.
CREATE TABLE IF NOT EXISTS log_state (
	id SMALLINT NOT NULL PRIMARY KEY,
	size BIGINT NOT NULL
)

INSERT OR IGNORE INTO log_state (id, size) VALUES (1, 0)

-- The stored hashes of the tree's perfect subtrees, by level (1 and up),
-- consecutive from idx 0: they only speed proofs up (adapters/tlog).
CREATE TABLE IF NOT EXISTS log_hashes (
	level SMALLINT NOT NULL,
	idx BIGINT NOT NULL,
	hash BLOB NOT NULL,
	PRIMARY KEY (level, idx)
)

-- The signed checkpoints, one per tree size.
CREATE TABLE IF NOT EXISTS log_checkpoints (
	size BIGINT NOT NULL PRIMARY KEY,
	root BLOB NOT NULL,
	note BLOB NOT NULL,
	signed_at BIGINT NOT NULL
)

-- The legal holds: the events of a held project are never pruned.
CREATE TABLE IF NOT EXISTS log_holds (
	project TEXT NOT NULL PRIMARY KEY,
	since BIGINT NOT NULL
)

-- The prune lock: one row, locked by a transaction that prunes and by one
-- that places a hold, so that a hold is never placed while a prune that
-- did not see it runs.
CREATE TABLE IF NOT EXISTS log_prune (
	id SMALLINT NOT NULL PRIMARY KEY
)

INSERT OR IGNORE INTO log_prune (id) VALUES (1)
