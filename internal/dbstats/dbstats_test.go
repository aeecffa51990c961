package dbstats_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/internal/dbstats"
)

func TestAnalyzeSQLite(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open(sqliteshim.ShimName, filepath.Join(t.TempDir(), "a.db")+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{"CREATE TABLE t (a INTEGER)", "CREATE INDEX t_a ON t (a)", "INSERT INTO t VALUES (1), (2), (2)"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := dbstats.Analyze(ctx, db, "sqlite"); err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_stat1 WHERE tbl = 't'").Scan(&n); err != nil || n == 0 {
		t.Errorf("statistics of t: got %d rows (error %v), want some", n, err)
	}
	if err := dbstats.Analyze(ctx, db, "oracle"); err == nil {
		t.Error("Analyze of an unknown system: got no error")
	}
}
