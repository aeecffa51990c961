package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// TestServeMigrationBound: the migrations serve runs at start-up are
// bounded; one still running at the bound fails start-up in one line that says to run flagadmin
// migrate first, with the same --db. With the bound of a server, the
// migrations run, each logged as it starts.
func TestServeMigrationBound(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	cfg := Config{DB: db}
	log := &syncbuffer.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	_, _, err := openServedStore(context.Background(), cfg, logger, time.Nanosecond)
	want := "migrate " + db + ": the migrations did not finish within the 1ns serve gives it at start-up; run flagadmin migrate first, with the same --db"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a migration cut by the bound: got %v, want one line starting %q", err, want)
	}
	if got := startupError(err).Error(); got != err.Error() {
		t.Errorf("serve reports %q, want the line itself", got)
	}

	store, closeStore, err := openServedStore(context.Background(), cfg, logger, openTimeout)
	if err != nil {
		t.Fatal(err)
	}
	closeStore()
	if _, ok := store.(interface{ Close() error }); !ok {
		t.Errorf("the served store is a %T, want the database's", store)
	}
	if !strings.Contains(log.String(), `msg="migrating the database" db=`+db+" step=20261202120000") {
		t.Errorf("the migrations were not logged as they started:\n%s", log)
	}
}

// TestServeRefusesANewerSchema: a database migrated by a newer flagadmin
// (a migration this one does not know) is refused by serve and by a
// command that reads it, in one line that says so, so that this version
// never writes what the newer one does not expect.
func TestServeRefusesANewerSchema(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	if code, _, errOut := runCLI(t, nil, "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errOut)
	}
	execSQL(t, dbtest.Raw(t, db), "INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES ('20991231000000', 99, CURRENT_TIMESTAMP)")
	for _, args := range [][]string{
		{"serve", "--db", db, "--addr", "127.0.0.1:0"},
		{"migrate", "--db", db},
		{"webhooks", "status", "--db", db},
	} {
		code, _, errOut := runCLI(t, nil, args...)
		if code != 1 || !strings.Contains(errOut, "was migrated by a newer flagadmin") || !strings.Contains(errOut, "20991231000000") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want one line saying a newer flagadmin migrated it", args, code, errOut)
		}
	}
}

// TestServeRefusesADevelopmentSchema: a database made by a development
// version of flagadmin (only migrations older than the baseline in
// bun_migrations) is refused by serve, migrate and a command that reads
// it, in one line that says so and what to do.
func TestServeRefusesADevelopmentSchema(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	if code, _, errOut := runCLI(t, nil, "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errOut)
	}
	execSQL(t, dbtest.Raw(t, db), "DELETE FROM bun_migrations",
		"INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES ('20261126000000', 1, CURRENT_TIMESTAMP), ('20261202000002', 2, CURRENT_TIMESTAMP)")
	want := "made by a development version of flagadmin, before the first release's schema, and this flagadmin cannot open it " +
		"(its newest migration is 20261202000002): start a new database and import or seed it again"
	for _, args := range [][]string{
		{"serve", "--db", db, "--addr", "127.0.0.1:0"},
		{"migrate", "--db", db},
		{"webhooks", "status", "--db", db},
	} {
		code, _, errOut := runCLI(t, nil, args...)
		if code != 1 || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want one line containing %q", args, code, errOut, want)
		}
	}
}
