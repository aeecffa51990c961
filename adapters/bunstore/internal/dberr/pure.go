//go:build !cgosqlite

package dberr

// nativeSQLiteCode reports no error of mattn/go-sqlite3: this build's
// SQLite driver is modernc.org/sqlite, whose errors have a Code method.
func nativeSQLiteCode(error) (int, bool) { return 0, false }
