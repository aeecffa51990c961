// Package sqlitedsn writes the data source names of SQLite files for the
// driver that sqliteshim registered: modernc.org/sqlite, the pure Go
// translation of SQLite and the default, or mattn/go-sqlite3, SQLite's own
// C compiled with cgo, in a build with the tags cgosqlite and sqlite_fts5
// (the store's full-text index needs FTS5). The two spell a connection's
// settings differently.
package sqlitedsn

import (
	"strconv"
	"time"

	"github.com/uptrace/bun/driver/sqliteshim"
)

// Native reports whether the build's SQLite driver is mattn/go-sqlite3.
func Native() bool { return sqliteshim.DriverName() == "sqlite3" }

// Driver names the build's SQLite driver, for the version a command
// prints.
func Driver() string {
	if Native() {
		return "SQLite through mattn/go-sqlite3 (cgo)"
	}
	return "SQLite through modernc.org/sqlite (pure Go)"
}

// Busy is the name of the SQLite database at path (a file path, or
// ":memory:") whose connections wait up to busy for a lock another
// connection holds.
func Busy(path string, busy time.Duration) string {
	return path + "?" + busyParam(busy)
}

// Store is Busy with the settings of the store's connections: foreign
// keys enforced, the write-ahead log, synchronous NORMAL, and, when
// immediate, transactions that take the write lock at BEGIN.
func Store(path string, busy time.Duration, immediate bool) string {
	dsn := Busy(path, busy)
	if Native() {
		dsn += "&_foreign_keys=1&_journal_mode=WAL&_synchronous=NORMAL"
	} else {
		dsn += "&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	}
	if immediate {
		dsn += "&_txlock=immediate"
	}
	return dsn
}

// busyParam is the parameter of a busy timeout of d (at least 1 ms).
func busyParam(d time.Duration) string {
	ms := strconv.FormatInt(max(d.Milliseconds(), 1), 10)
	if Native() {
		return "_busy_timeout=" + ms
	}
	return "_pragma=busy_timeout(" + ms + ")"
}
