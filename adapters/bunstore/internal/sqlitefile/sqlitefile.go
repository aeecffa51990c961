// Package sqlitefile says what keeps SQLite from opening a database file
// when the file system is the reason, which the driver's own message does
// not.
package sqlitefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Error is a SQLite database file that cannot be opened for a reason of
// the file system, which its message says: "bunstore: sqlite:/srv/x.db:
// directory /srv does not exist". It wraps the driver's failure (of kind
// flagadmin.ErrUnavailable), whose own message, such as "unable to open
// database file: out of memory (14)", would not say.
type Error struct {
	URL, Problem string
	Cause        error
}

func (e *Error) Error() string { return "bunstore: " + e.URL + ": " + e.Problem }

// Unwrap returns the driver's failure.
func (e *Error) Unwrap() error { return e.Cause }

// Problem says what keeps SQLite from opening the database file
// of a sqlite: URL's path (sqlite:PATH or sqlite:///PATH), if it is the
// file system: a directory that does not exist or is not writable (SQLite
// creates the file there, and a WAL database's -wal and -shm files beside
// it), or a file that is not one or cannot be read. It returns "" when it
// finds nothing wrong. It is called after a failure only: it may create
// and remove a file to learn whether the directory is writable.
func Problem(path string) string {
	if path == ":memory:" {
		return ""
	}
	if p, ok := strings.CutPrefix(path, "//"); ok {
		path = p
	}
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "directory " + dir + " does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "directory " + dir + " cannot be reached: permission denied"
	case err != nil:
		return ""
	case !info.IsDir():
		return dir + " is not a directory"
	}
	info, err = os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !writableDir(dir) {
			return "directory " + dir + " is not writable, so the database file cannot be created there"
		}
		return ""
	case err != nil:
		return ""
	case info.IsDir():
		return path + " is a directory, not a database file"
	}
	if f, err := os.Open(path); errors.Is(err, fs.ErrPermission) {
		return "file " + path + " is not readable"
	} else if err == nil {
		f.Close()
	}
	if !writableDir(dir) {
		return "directory " + dir + " is not writable: SQLite needs to create the database's -wal and -shm files " +
			"beside it (a read-only database file in a writable directory is opened read-only)"
	}
	return ""
}

// writableDir reports whether a file can be created in dir, by creating
// and removing one.
func writableDir(dir string) bool {
	f, err := os.CreateTemp(dir, ".bunstore-probe-*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}
