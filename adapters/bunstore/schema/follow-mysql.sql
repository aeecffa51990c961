-- The follow state on MySQL and MariaDB: migration 20261127000002
-- (migrations.go, follow.go). Statements are separated by blank lines; both
-- may run again.

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
