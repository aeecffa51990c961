package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestWorldFromCopiesAMissingDatabase: with --world-from, a missing
// PostgreSQL database is created as a copy of the one named (its tables
// and rows), and an existing one is left as it is.
func TestWorldFromCopiesAMissingDatabase(t *testing.T) {
	dsn := os.Getenv(dbtest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: this test creates PostgreSQL databases", dbtest.PostgresEnv)
	}
	ctx := context.Background()
	named := func(name string) *database {
		t.Helper()
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + name
		d, err := parseDatabase(u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := d.drop(context.Background()); err != nil {
				t.Errorf("drop %s: %v", name, err)
			}
		})
		return d
	}
	suffix := fmt.Sprintf("%d", os.Getpid())
	src := named("flagadmin_bench_test_src_" + suffix)
	if err := src.ensureExists(ctx); err != nil {
		t.Fatal(err)
	}
	execIn(t, src, "CREATE TABLE world (n INT); INSERT INTO world VALUES (42)")

	cp := named("flagadmin_bench_test_copy_" + suffix)
	cp.template = src.name
	if err := cp.ensureExists(ctx); err != nil {
		t.Fatal(err)
	}
	if n := worldRow(t, cp); n != 42 {
		t.Errorf("the copy's row = %d, want 42", n)
	}

	// An existing database is not copied again: its own rows stay.
	execIn(t, cp, "UPDATE world SET n = 7")
	if err := cp.ensureExists(ctx); err != nil {
		t.Fatal(err)
	}
	if n := worldRow(t, cp); n != 7 {
		t.Errorf("after a second ensureExists the row = %d, want 7 (the database kept)", n)
	}
}

// execIn runs stmt in the database d.
func execIn(t *testing.T, d *database, stmt string) {
	t.Helper()
	db, err := d.openSelf()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

// worldRow reads the one row of the table world in d.
func worldRow(t *testing.T, d *database) int {
	t.Helper()
	db, err := d.openSelf()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT n FROM world").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
