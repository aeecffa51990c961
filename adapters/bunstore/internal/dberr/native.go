//go:build cgosqlite

package dberr

import (
	"errors"

	"github.com/mattn/go-sqlite3"
)

// nativeSQLiteCode returns the primary result code of an error of
// mattn/go-sqlite3, the driver of a build with the tag cgosqlite.
func nativeSQLiteCode(err error) (int, bool) {
	var e sqlite3.Error
	if errors.As(err, &e) {
		return int(e.Code), true
	}
	return 0, false
}
