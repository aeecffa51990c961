package sqlitedsn_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/internal/sqlitedsn"
)

// TestStoreSettings: a connection opened with Store's name has each of
// its settings, with whichever driver the build has.
func TestStoreSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := sql.Open(sqliteshim.ShimName, sqlitedsn.Store(path, 1500*time.Millisecond, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for pragma, want := range map[string]string{"foreign_keys": "1", "journal_mode": "wal", "synchronous": "1", "busy_timeout": "1500"} {
		var got string
		if err := db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s (driver %s)", pragma, got, want, sqliteshim.DriverName())
		}
	}
}

// TestStoreImmediate: a transaction of a connection opened with Store's
// name and immediate holds the write lock from its BEGIN, before it
// writes: another connection that waits 1 ms cannot write meanwhile.
func TestStoreImmediate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	writer, err := sql.Open(sqliteshim.ShimName, sqlitedsn.Store(path, time.Second, true))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.Exec("CREATE TABLE items (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open(sqliteshim.ShimName, sqlitedsn.Busy(path, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := writer.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec("INSERT INTO items (n) VALUES (1)"); err == nil {
		t.Error("another connection wrote while an immediate transaction was open")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec("INSERT INTO items (n) VALUES (1)"); err != nil {
		t.Errorf("after the rollback: %v", err)
	}
}
