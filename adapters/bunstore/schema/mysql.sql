-- The baseline schema on MySQL and MariaDB: migration 20261202120000
-- (migrations.go). Statements are separated by blank lines. Times are
-- BIGINT Unix milliseconds (UTC); JSON is LONGTEXT (the bytes come back as
-- written). Every table compares strings byte for byte: {collation} is
-- utf8mb4_0900_bin (MySQL 8), utf8mb4_nopad_bin (MariaDB) or utf8mb4_bin.
-- An index key stays under InnoDB's 3072 bytes (4 per character).

CREATE TABLE IF NOT EXISTS users (
	id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	name TEXT NOT NULL,
	username TEXT NOT NULL,
	email TEXT NOT NULL,
	root_role VARCHAR(64) NOT NULL,
	is_service BOOLEAN NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE IF NOT EXISTS user_groups (
	id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	name TEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE IF NOT EXISTS group_members (
	group_id BIGINT NOT NULL,
	user_id BIGINT NOT NULL,
	PRIMARY KEY (group_id, user_id),
	FOREIGN KEY (group_id) REFERENCES user_groups (id) ON DELETE CASCADE,
	FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
	INDEX group_members_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE IF NOT EXISTS projects (
	id VARCHAR(255) NOT NULL PRIMARY KEY,
	name TEXT NOT NULL,
	description TEXT NOT NULL,
	mode VARCHAR(64) NOT NULL,
	created_at BIGINT NOT NULL,
	archived_at BIGINT NULL,
	INDEX projects_mode (mode)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE IF NOT EXISTS project_members (
	id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	project_id VARCHAR(255) NOT NULL,
	user_id BIGINT NULL,
	group_id BIGINT NULL,
	role VARCHAR(64) NOT NULL,
	UNIQUE (project_id, user_id),
	UNIQUE (project_id, group_id),
	FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE,
	FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
	FOREIGN KEY (group_id) REFERENCES user_groups (id) ON DELETE CASCADE,
	INDEX project_members_user (user_id),
	INDEX project_members_group (group_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE IF NOT EXISTS project_favorites (
	project_id VARCHAR(255) NOT NULL,
	user_id BIGINT NOT NULL,
	PRIMARY KEY (project_id, user_id),
	FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE,
	FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
	INDEX project_favorites_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- features_fresh: the features by type and creation time (MySQL has no
-- partial index for the fresh ones alone).
CREATE TABLE IF NOT EXISTS features (
	name VARCHAR(255) NOT NULL PRIMARY KEY,
	project VARCHAR(255) NOT NULL,
	type VARCHAR(64) NOT NULL,
	stale BOOLEAN NOT NULL,
	created_at BIGINT NOT NULL,
	archived_at BIGINT NULL,
	last_seen_at BIGINT NULL,
	tags LONGTEXT NULL,
	lifecycle_stage VARCHAR(64) NOT NULL,
	lifecycle_status VARCHAR(64) NOT NULL,
	lifecycle_status_value TEXT NOT NULL,
	FOREIGN KEY (project) REFERENCES projects (id),
	INDEX features_project (project),
	INDEX features_fresh (type, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

CREATE TABLE IF NOT EXISTS api_tokens (
	secret_hash VARCHAR(255) NOT NULL PRIMARY KEY,
	name TEXT NOT NULL,
	type VARCHAR(64) NOT NULL,
	user_id BIGINT NULL,
	project TEXT NOT NULL,
	environment TEXT NOT NULL,
	expires_at BIGINT NULL,
	created_at BIGINT NOT NULL,
	FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
	INDEX api_tokens_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The events, with one index per filter column, (column, created_at, id),
-- for pages in the order created_at DESC, id DESC; the project makes
-- events_created covering for callers who cannot see some projects.
-- search_payload and search_meta are the lower-cased texts of free-text
-- queries (flagadmin.SearchTexts), scanned: MySQL has no substring index.
CREATE TABLE IF NOT EXISTS events (
	id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	created_at BIGINT NOT NULL,
	type VARCHAR(255) NOT NULL,
	created_by TEXT NOT NULL,
	created_by_user_id BIGINT NULL,
	environment VARCHAR(700) NULL,
	project VARCHAR(700) NULL,
	feature_name VARCHAR(700) NULL,
	data LONGTEXT NULL,
	pre_data LONGTEXT NULL,
	tags LONGTEXT NULL,
	group_type VARCHAR(255) NULL,
	group_id VARCHAR(700) NULL,
	search_payload LONGTEXT NOT NULL,
	search_meta TEXT NOT NULL,
	-- The salt: 16 random bytes drawn when the event is written, which its
	-- leaf commits to (leaf.LeafHash, adapters/tlog/leaf). Read back only
	-- for the log.
	salt VARBINARY(16) NOT NULL,
	INDEX events_feature (feature_name, created_at, id),
	INDEX events_project (project, created_at, id),
	INDEX events_type (type, created_at, id),
	INDEX events_created_by_user (created_by_user_id, created_at, id),
	INDEX events_environment (environment, created_at, id),
	INDEX events_group (group_id, created_at, id),
	INDEX events_created (created_at, id, project)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The event order lock (record.go): one row, locked by every transaction
-- that draws event ids, from right before it draws them to its end.
CREATE TABLE IF NOT EXISTS event_order (
	id SMALLINT NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

INSERT IGNORE INTO event_order (id) VALUES (1)

-- The change counter (version.go): the sum of v. Row 0 starts at the time
-- of creation in Unix milliseconds, so that a database made again never
-- shows a version below the readings of the one before. Row 16 is raised
-- only by a pruning batch, under the prune lock (prune.go): a batch holds
-- no row a writer raises.
CREATE TABLE IF NOT EXISTS store_versions (
	shard SMALLINT NOT NULL PRIMARY KEY,
	v BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

INSERT IGNORE INTO store_versions (shard, v) VALUES
	(0, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0),
	(8, 0), (9, 0), (10, 0), (11, 0), (12, 0), (13, 0), (14, 0), (15, 0), (16, 0)

-- The delivery state of webhook sinks (webhooks.go).
CREATE TABLE IF NOT EXISTS webhook_sinks (
	name VARCHAR(255) NOT NULL PRIMARY KEY,
	after_id BIGINT NOT NULL,
	delivered BIGINT NOT NULL,
	attempts INTEGER NOT NULL,
	last_error TEXT NOT NULL,
	last_error_at BIGINT NOT NULL,
	holder VARCHAR(255) NOT NULL,
	lease_until BIGINT NOT NULL,
	seq BIGINT NOT NULL,
	created_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The summaries: tables derived from the ones above, kept in the writing
-- transaction by a store with its tuning on (tuning.go), and rebuilt from
-- the base tables when stale.
CREATE TABLE IF NOT EXISTS summary_state (
	name VARCHAR(64) NOT NULL PRIMARY KEY,
	stale BOOLEAN NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

INSERT IGNORE INTO summary_state (name, stale) VALUES ('event_counts', FALSE), ('project_stats', FALSE)

-- Event counts (internal/eventcounts): n events, the newest created at newest. The project and the value are
-- bytes, at most 1000 of each (longer ones are not counted), so that the
-- key stays under 3072 bytes.
CREATE TABLE IF NOT EXISTS event_counts (
	dim SMALLINT NOT NULL,
	scope SMALLINT NOT NULL,
	project VARBINARY(1000) NOT NULL,
	value VARBINARY(1000) NOT NULL,
	num BIGINT NOT NULL,
	shard SMALLINT NOT NULL,
	n BIGINT NOT NULL,
	newest BIGINT NOT NULL,
	PRIMARY KEY (dim, scope, project, value, num, shard)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The project list's figures (internal/projectfigures).
CREATE TABLE IF NOT EXISTS project_stats (
	project_id VARCHAR(255) NOT NULL PRIMARY KEY,
	features BIGINT NOT NULL,
	stale BIGINT NOT NULL,
	fresh_release BIGINT NOT NULL,
	fresh_experiment BIGINT NOT NULL,
	fresh_operational BIGINT NOT NULL,
	fresh_kill_switch BIGINT NOT NULL,
	fresh_permission BIGINT NOT NULL,
	members BIGINT NOT NULL,
	last_seen_at BIGINT NULL,
	FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

-- The verifiable log (log.go) and its retention (prune.go).
--
-- The leaves of the log's tree: leaf idx (from 0) is the idx-th event in
-- id order; hash is its leaf.LeafHash. Appended with the events, in
-- their transaction, under the event order lock (record.go); never
-- removed: pruning marks them. The log's size is the last leaf's idx + 1,
-- read from the primary key (leaves.go). created_at (Unix milliseconds),
-- project, type and content (leaf.ContentCommitment) are what the
-- leaf commits to apart from the rest of its event, kept when the event
-- is pruned (a tombstone), so that its hash can be recomputed
-- (leaf.LeafOf).
CREATE TABLE IF NOT EXISTS log_leaves (
	idx BIGINT NOT NULL PRIMARY KEY,
	event_id BIGINT NOT NULL,
	hash BINARY(32) NOT NULL,
	pruned BOOLEAN NOT NULL DEFAULT FALSE,
	created_at BIGINT NOT NULL,
	project VARCHAR(700) NULL,
	type VARCHAR(255) NOT NULL,
	content BINARY(32) NOT NULL,
	UNIQUE INDEX log_leaves_event (event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}

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

-- The one row of the store's follow state: the followed source, the
-- position and holes, the synced time and the follow lease.
CREATE TABLE IF NOT EXISTS follow_state (
	id SMALLINT NOT NULL PRIMARY KEY,
	source_system_id VARCHAR(64) NOT NULL,
	source_database VARCHAR(255) NOT NULL,
	source_url TEXT NOT NULL,
	event_position BIGINT NOT NULL,
	holes BIGINT NOT NULL,
	synced_at BIGINT NOT NULL,
	holder VARCHAR(255) NOT NULL,
	lease_until BIGINT NOT NULL,
	seq BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4

INSERT IGNORE INTO follow_state VALUES (1, '', '', '', 0, 0, 0, '', 0, 0)
