package bunstore

import "database/sql"

// PoolStats returns the statistics of the store's connection pools, by
// name: "main" for the one pool of PostgreSQL, MySQL and an in-memory
// SQLite database; "write" (its one writer connection) and "read" for a
// SQLite file. For metrics.
func (s *Store) PoolStats() map[string]sql.DBStats {
	if s.rdb == s.db {
		return map[string]sql.DBStats{"main": s.db.Stats()}
	}
	return map[string]sql.DBStats{"write": s.db.Stats(), "read": s.rdb.Stats()}
}
