-- The follow state on PostgreSQL: migration 20261127000002
-- (migrations.go, follow.go). Statements are separated by blank lines; both
-- may run again.

-- The one row of the store's follow state: the followed source, the
-- position and holes, the synced time and the follow lease.
CREATE TABLE IF NOT EXISTS follow_state (
	id SMALLINT NOT NULL PRIMARY KEY,
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
