-- The schema the development versions' 17 migrations made on SQLite (names
-- 20250601000001 to 20250601000017 in bun_migrations), as the database
-- dumped it: the database carryover_test.go carries over to the baseline.
-- Statements are separated by blank lines.

CREATE TABLE bun_migrations ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "name" VARCHAR, "group_id" INTEGER, "migrated_at" TIMESTAMP NOT NULL DEFAULT current_timestamp)

CREATE TABLE bun_migration_locks ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "table_name" VARCHAR, UNIQUE ("table_name"))

CREATE TABLE group_members (
		group_id BIGINT NOT NULL,
		user_id BIGINT NOT NULL,
		PRIMARY KEY (group_id, user_id),
		FOREIGN KEY (group_id) REFERENCES user_groups (id) ON DELETE CASCADE,
		FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
)

CREATE INDEX group_members_user ON group_members (user_id)

CREATE TABLE projects (
		id TEXT NOT NULL PRIMARY KEY,
		name TEXT NOT NULL,
		description TEXT NOT NULL,
		mode TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		archived_at BIGINT NULL
)

CREATE INDEX projects_mode ON projects (mode)

CREATE TABLE project_members (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		project_id TEXT NOT NULL,
		user_id BIGINT NULL,
		group_id BIGINT NULL,
		role TEXT NOT NULL,
		UNIQUE (project_id, user_id),
		UNIQUE (project_id, group_id),
		FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE,
		FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
		FOREIGN KEY (group_id) REFERENCES user_groups (id) ON DELETE CASCADE
)

CREATE INDEX project_members_user ON project_members (user_id)

CREATE INDEX project_members_group ON project_members (group_id)

CREATE TABLE project_favorites (
		project_id TEXT NOT NULL,
		user_id BIGINT NOT NULL,
		PRIMARY KEY (project_id, user_id),
		FOREIGN KEY (project_id) REFERENCES projects (id) ON DELETE CASCADE,
		FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
)

CREATE INDEX project_favorites_user ON project_favorites (user_id)

CREATE TABLE features (
		name TEXT NOT NULL PRIMARY KEY,
		project TEXT NOT NULL,
		type TEXT NOT NULL,
		stale BOOLEAN NOT NULL,
		created_at BIGINT NOT NULL,
		archived_at BIGINT NULL,
		last_seen_at BIGINT NULL,
		tags TEXT NULL,
		lifecycle_stage TEXT NOT NULL,
		lifecycle_status TEXT NOT NULL,
		lifecycle_status_value TEXT NOT NULL,
		FOREIGN KEY (project) REFERENCES projects (id)
)

CREATE INDEX features_project ON features (project)

CREATE TABLE api_tokens (
		secret_hash TEXT NOT NULL PRIMARY KEY,
		name TEXT NOT NULL,
		type TEXT NOT NULL,
		user_id BIGINT NULL,
		project TEXT NOT NULL,
		environment TEXT NOT NULL,
		expires_at BIGINT NULL,
		created_at BIGINT NOT NULL,
		FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
)

CREATE INDEX api_tokens_user ON api_tokens (user_id)

CREATE TABLE events (
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
		group_id BIGINT NULL,
		search_payload TEXT NOT NULL,
		search_meta TEXT NOT NULL
)

CREATE INDEX events_feature ON events (feature_name, created_at, id) WHERE feature_name IS NOT NULL

CREATE INDEX events_project ON events (project, created_at, id) WHERE project IS NOT NULL

CREATE INDEX events_type ON events (type, created_at, id)

CREATE INDEX events_created_by_user ON events (created_by_user_id, created_at, id) WHERE created_by_user_id IS NOT NULL

CREATE INDEX events_environment ON events (environment, created_at, id) WHERE environment IS NOT NULL

CREATE INDEX events_group ON events (group_id, created_at, id) WHERE group_id IS NOT NULL

CREATE TABLE event_counts (
		dim TEXT NOT NULL,
		val TEXT NOT NULL,
		n BIGINT NOT NULL,
		PRIMARY KEY (dim, val)
)

CREATE TABLE project_stats (
		project_id TEXT NOT NULL PRIMARY KEY,
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
)

CREATE INDEX features_fresh ON features (type, created_at, project) WHERE archived_at IS NULL AND NOT stale

CREATE VIRTUAL TABLE events_text USING fts5(search_payload, search_meta, content='',
		tokenize='trigram case_sensitive 1')
/* events_text(search_payload,search_meta) */

CREATE TRIGGER events_text_insert AFTER INSERT ON events BEGIN
		INSERT INTO events_text (rowid, search_payload, search_meta)
		VALUES (new.id, new.search_payload, new.search_meta);
	END

CREATE TRIGGER events_text_delete AFTER DELETE ON events BEGIN
		INSERT INTO events_text (events_text, rowid, search_payload, search_meta)
		VALUES ('delete', old.id, old.search_payload, old.search_meta);
	END

CREATE TRIGGER events_text_update AFTER UPDATE OF id, search_payload, search_meta ON events BEGIN
		INSERT INTO events_text (events_text, rowid, search_payload, search_meta)
		VALUES ('delete', old.id, old.search_payload, old.search_meta);
		INSERT INTO events_text (rowid, search_payload, search_meta)
		VALUES (new.id, new.search_payload, new.search_meta);
	END

CREATE TABLE store_versions (
		shard SMALLINT NOT NULL PRIMARY KEY,
		v BIGINT NOT NULL
)

CREATE TABLE project_last_events (
		project TEXT NOT NULL,
		shard SMALLINT NOT NULL,
		last_event_at BIGINT NOT NULL,
		PRIMARY KEY (project, shard)
)

CREATE TABLE IF NOT EXISTS "users" (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		name TEXT NOT NULL,
		username TEXT NOT NULL,
		email TEXT NOT NULL,
		root_role TEXT NOT NULL,
		is_service BOOLEAN NOT NULL
)

CREATE TABLE IF NOT EXISTS "user_groups" (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		name TEXT NOT NULL
)

CREATE TABLE event_order (
		id SMALLINT NOT NULL PRIMARY KEY
)

CREATE TABLE webhook_sinks (
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

CREATE INDEX events_created ON events (created_at, id, project)

INSERT INTO event_order (id) VALUES (1)

INSERT INTO store_versions (shard, v) VALUES (0, 1795721985835), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0), (10, 0), (11, 0), (12, 0), (13, 0), (14, 0), (15, 0)

INSERT INTO bun_migrations (name, group_id) VALUES ('20250601000001', 1), ('20250601000002', 1), ('20250601000003', 1), ('20250601000004', 1), ('20250601000005', 1), ('20250601000006', 1), ('20250601000007', 1), ('20250601000008', 1), ('20250601000009', 1), ('20250601000010', 1), ('20250601000011', 1), ('20250601000013', 1), ('20250601000014', 1), ('20250601000016', 1), ('20250601000017', 1)
