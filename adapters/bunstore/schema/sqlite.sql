-- The baseline schema on SQLite: migration 20261202120000 (migrations.go).
-- Statements are separated by blank lines. Times are BIGINT Unix
-- milliseconds (UTC); JSON is TEXT (the bytes come back as written).

CREATE TABLE IF NOT EXISTS users (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	name TEXT NOT NULL,
	username TEXT NOT NULL,
	email TEXT NOT NULL,
	root_role TEXT NOT NULL,
	is_service BOOLEAN NOT NULL
)

CREATE TABLE IF NOT EXISTS user_groups (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	name TEXT NOT NULL
)

CREATE TABLE IF NOT EXISTS group_members (
	group_id BIGINT NOT NULL REFERENCES user_groups (id) ON DELETE CASCADE,
	user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	PRIMARY KEY (group_id, user_id)
)

CREATE INDEX IF NOT EXISTS group_members_user ON group_members (user_id)

CREATE TABLE IF NOT EXISTS projects (
	id TEXT NOT NULL PRIMARY KEY,
	name TEXT NOT NULL,
	description TEXT NOT NULL,
	mode TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	archived_at BIGINT NULL
)

CREATE INDEX IF NOT EXISTS projects_mode ON projects (mode)

CREATE TABLE IF NOT EXISTS project_members (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	user_id BIGINT NULL REFERENCES users (id) ON DELETE CASCADE,
	group_id BIGINT NULL REFERENCES user_groups (id) ON DELETE CASCADE,
	role TEXT NOT NULL,
	UNIQUE (project_id, user_id),
	UNIQUE (project_id, group_id)
)

CREATE INDEX IF NOT EXISTS project_members_user ON project_members (user_id)

CREATE INDEX IF NOT EXISTS project_members_group ON project_members (group_id)

CREATE TABLE IF NOT EXISTS project_favorites (
	project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	PRIMARY KEY (project_id, user_id)
)

CREATE INDEX IF NOT EXISTS project_favorites_user ON project_favorites (user_id)

CREATE TABLE IF NOT EXISTS features (
	name TEXT NOT NULL PRIMARY KEY,
	project TEXT NOT NULL REFERENCES projects (id),
	type TEXT NOT NULL,
	stale BOOLEAN NOT NULL,
	created_at BIGINT NOT NULL,
	archived_at BIGINT NULL,
	last_seen_at BIGINT NULL,
	tags TEXT NULL,
	lifecycle_stage TEXT NOT NULL,
	lifecycle_status TEXT NOT NULL,
	lifecycle_status_value TEXT NOT NULL
)

CREATE INDEX IF NOT EXISTS features_project ON features (project)

-- The fresh features (not archived, not stale) by type and creation time:
-- the project list counts those created since their type's cut-off here.
CREATE INDEX IF NOT EXISTS features_fresh ON features (type, created_at, project) WHERE archived_at IS NULL AND NOT stale

CREATE TABLE IF NOT EXISTS api_tokens (
	secret_hash TEXT NOT NULL PRIMARY KEY,
	name TEXT NOT NULL,
	type TEXT NOT NULL,
	user_id BIGINT NULL REFERENCES users (id) ON DELETE CASCADE,
	project TEXT NOT NULL,
	environment TEXT NOT NULL,
	expires_at BIGINT NULL,
	created_at BIGINT NOT NULL
)

CREATE INDEX IF NOT EXISTS api_tokens_user ON api_tokens (user_id)

-- The events. search_payload and search_meta are the lower-cased texts of
-- free-text queries (flagadmin.SearchTexts).
CREATE TABLE IF NOT EXISTS events (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	created_at BIGINT NOT NULL,
	type TEXT NOT NULL,
	created_by TEXT NOT NULL,
	created_by_user_id BIGINT NULL,
	environment TEXT NULL,
	project TEXT NULL,
	feature_name TEXT NULL,
	data TEXT NULL,
	pre_data TEXT NULL,
	tags TEXT NULL,
	group_type TEXT NULL,
	group_id TEXT NULL,
	search_payload TEXT NOT NULL,
	search_meta TEXT NOT NULL,
	-- The salt: 16 random bytes drawn when the event is written, which its
	-- leaf commits to (leaf.LeafHash, adapters/tlog/leaf). Read back only
	-- for the log.
	salt BLOB NOT NULL
)

-- One index per filter column, (column, created_at, id), for pages in the
-- order created_at DESC, id DESC; the project makes events_created
-- covering for callers who cannot see some projects.
CREATE INDEX IF NOT EXISTS events_created ON events (created_at, id, project)

CREATE INDEX IF NOT EXISTS events_feature ON events (feature_name, created_at, id) WHERE feature_name IS NOT NULL

CREATE INDEX IF NOT EXISTS events_project ON events (project, created_at, id) WHERE project IS NOT NULL

CREATE INDEX IF NOT EXISTS events_type ON events (type, created_at, id)

CREATE INDEX IF NOT EXISTS events_created_by_user ON events (created_by_user_id, created_at, id) WHERE created_by_user_id IS NOT NULL

CREATE INDEX IF NOT EXISTS events_environment ON events (environment, created_at, id) WHERE environment IS NOT NULL

CREATE INDEX IF NOT EXISTS events_group ON events (group_id, created_at, id) WHERE group_id IS NOT NULL

-- The index of free-text queries (internal/textindex): a contentless FTS5
-- table with the case-sensitive trigram tokenizer over both search texts
-- (rowid = events.id), kept by triggers. It forgets a row when given the
-- values it indexed, which the delete and update triggers pass.
CREATE VIRTUAL TABLE IF NOT EXISTS events_text USING fts5(search_payload, search_meta, content='',
	tokenize='trigram case_sensitive 1')

CREATE TRIGGER IF NOT EXISTS events_text_insert AFTER INSERT ON events BEGIN
	INSERT INTO events_text (rowid, search_payload, search_meta)
	VALUES (new.id, new.search_payload, new.search_meta);
END

CREATE TRIGGER IF NOT EXISTS events_text_delete AFTER DELETE ON events BEGIN
	INSERT INTO events_text (events_text, rowid, search_payload, search_meta)
	VALUES ('delete', old.id, old.search_payload, old.search_meta);
END

CREATE TRIGGER IF NOT EXISTS events_text_update AFTER UPDATE OF id, search_payload, search_meta ON events BEGIN
	INSERT INTO events_text (events_text, rowid, search_payload, search_meta)
	VALUES ('delete', old.id, old.search_payload, old.search_meta);
	INSERT INTO events_text (rowid, search_payload, search_meta)
	VALUES (new.id, new.search_payload, new.search_meta);
END

-- The event order table (record.go): SQLite's single writer connection
-- needs no lock, but the table is there on every database.
CREATE TABLE IF NOT EXISTS event_order (
	id SMALLINT NOT NULL PRIMARY KEY
)

INSERT OR IGNORE INTO event_order (id) VALUES (1)

-- The change counter (version.go): the sum of v. Row 0 starts at the time
-- of creation in Unix milliseconds, so that a database made again never
-- shows a version below the readings of the one before. Row 16 is raised
-- only by a pruning batch, under the prune lock (prune.go): a batch holds
-- no row a writer raises.
CREATE TABLE IF NOT EXISTS store_versions (
	shard SMALLINT NOT NULL PRIMARY KEY,
	v BIGINT NOT NULL
)

INSERT OR IGNORE INTO store_versions (shard, v) VALUES
	(0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0),
	(8, 0), (9, 0), (10, 0), (11, 0), (12, 0), (13, 0), (14, 0), (15, 0), (16, 0)

-- The delivery state of webhook sinks (webhooks.go).
CREATE TABLE IF NOT EXISTS webhook_sinks (
	name TEXT NOT NULL PRIMARY KEY,
	after_id BIGINT NOT NULL,
	delivered BIGINT NOT NULL,
	attempts INTEGER NOT NULL,
	last_error TEXT NOT NULL,
	last_error_at BIGINT NOT NULL,
	holder TEXT NOT NULL,
	lease_until BIGINT NOT NULL,
	seq BIGINT NOT NULL,
	created_at BIGINT NOT NULL
)

-- The summaries: tables derived from the ones above, kept in the writing
-- transaction by a store with its tuning on (tuning.go), and rebuilt from
-- the base tables when stale.
CREATE TABLE IF NOT EXISTS summary_state (
	name TEXT NOT NULL PRIMARY KEY,
	stale BOOLEAN NOT NULL
)

INSERT OR IGNORE INTO summary_state (name, stale) VALUES ('event_counts', FALSE), ('project_stats', FALSE)

-- Event counts (internal/eventcounts): n events, the newest created at
-- newest. WITHOUT ROWID: a row lives in its key's b-tree alone.
CREATE TABLE IF NOT EXISTS event_counts (
	dim SMALLINT NOT NULL,
	scope SMALLINT NOT NULL,
	project TEXT NOT NULL,
	value TEXT NOT NULL,
	num BIGINT NOT NULL,
	shard SMALLINT NOT NULL,
	n BIGINT NOT NULL,
	newest BIGINT NOT NULL,
	PRIMARY KEY (dim, scope, project, value, num, shard)
) WITHOUT ROWID

-- The project list's figures (internal/projectfigures).
CREATE TABLE IF NOT EXISTS project_stats (
	project_id TEXT NOT NULL PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
	features BIGINT NOT NULL,
	stale BIGINT NOT NULL,
	fresh_release BIGINT NOT NULL,
	fresh_experiment BIGINT NOT NULL,
	fresh_operational BIGINT NOT NULL,
	fresh_kill_switch BIGINT NOT NULL,
	fresh_permission BIGINT NOT NULL,
	members BIGINT NOT NULL,
	last_seen_at BIGINT NULL
)

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
	hash BLOB NOT NULL,
	pruned BOOLEAN NOT NULL DEFAULT FALSE,
	created_at BIGINT NOT NULL,
	project TEXT NULL,
	type TEXT NOT NULL,
	content BLOB NOT NULL
)

CREATE UNIQUE INDEX IF NOT EXISTS log_leaves_event ON log_leaves (event_id)

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

-- The one row of the store's follow state: the followed source, the
-- position and holes, the synced time and the follow lease.
CREATE TABLE IF NOT EXISTS follow_state (
	id INTEGER NOT NULL PRIMARY KEY,
	source_system_id TEXT NOT NULL,
	source_database TEXT NOT NULL,
	source_url TEXT NOT NULL,
	event_position BIGINT NOT NULL,
	holes BIGINT NOT NULL,
	synced_at BIGINT NOT NULL,
	holder TEXT NOT NULL,
	lease_until BIGINT NOT NULL,
	seq BIGINT NOT NULL
)

INSERT INTO follow_state VALUES (1, '', '', '', 0, 0, 0, '', 0, 0) ON CONFLICT DO NOTHING
