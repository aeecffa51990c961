package bunstore

import "database/sql"

// PoolStats returns the statistics of the store's connection pools, by
// name: "main" for the one pool of PostgreSQL, MySQL and an in-memory
// SQLite database; "write" (its one writer connection) and "read" for a
// SQLite file. For metrics. The reads that waited their turn for a
// connection (readGate) count among the waits of the pool they read.
func (s *Store) PoolStats() map[string]sql.DBStats {
	read := s.rdb.Stats()
	s.reads.addWaits(&read)
	if s.rdb == s.db {
		return map[string]sql.DBStats{"main": read}
	}
	return map[string]sql.DBStats{"write": s.db.Stats(), "read": read}
}
