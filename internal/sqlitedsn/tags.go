//go:build cgosqlite && !(sqlite_fts5 && sqlite_stat4)

package sqlitedsn

// A build with mattn/go-sqlite3 needs FTS5 (the full-text index) and STAT4
// (the query planner's samples, as modernc.org/sqlite has them): this
// fails such a build that lacks either, naming the tags.
const _ = build_with_tags_cgosqlite_sqlite_fts5_sqlite_stat4
