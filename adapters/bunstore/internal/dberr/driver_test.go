package dberr

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestClassifiesTheSQLiteDriversErrors: the errors of the build's SQLite
// driver itself (modernc.org/sqlite, or mattn/go-sqlite3 with the tag
// cgosqlite), not errors shaped like them: a duplicate key is a conflict,
// a write to a database opened read-only is unavailable.
func TestClassifiesTheSQLiteDriversErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := sql.Open(sqliteshim.ShimName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE items (n INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO items (n) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	_, dup := db.Exec("INSERT INTO items (n) VALUES (1)")
	if kind, _ := Classify(dup); kind != flagadmin.ErrConflict {
		t.Errorf("duplicate key (%v, driver %s): got %v, want a conflict", dup, sqliteshim.DriverName(), kind)
	}
	ro, err := sql.Open(sqliteshim.ShimName, "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, readOnly := ro.Exec("INSERT INTO items (n) VALUES (2)")
	if kind, _ := Classify(readOnly); kind != flagadmin.ErrUnavailable {
		t.Errorf("read-only (%v, driver %s): got %v, want unavailable", readOnly, sqliteshim.DriverName(), kind)
	}
}
