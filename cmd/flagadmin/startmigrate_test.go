package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// TestServeMigrationBound: the migrations serve runs at start-up are
// bounded; one still running at the bound (the rebuild of a large log
// takes minutes) fails start-up in one line that says to run flagadmin
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
	if !strings.Contains(log.String(), `msg="migrating the database" db=`+db+" step=20261202000001") {
		t.Errorf("the migrations were not logged as they started:\n%s", log)
	}
}

// TestServeMigrationBoundCutsARebuild: the rebuild of a log under leaf
// format v1 still running at serve's bound is cut short, changing
// nothing, and the line names it; flagadmin migrate then runs it.
func TestServeMigrationBoundCutsARebuild(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	ctx := context.Background()
	store, err := bunstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	for first := 0; first < n; first += 1000 {
		var batch flagadmin.Batch
		for i := first; i < first+1000; i++ {
			batch.Events = append(batch.Events, flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "eve", CreatedAt: time.Date(2026, 2, 1, 0, 0, 0, i, time.UTC)})
		}
		if err := store.Write(ctx, &batch); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	// The log as the release before v1 left it, to be rebuilt.
	execSQL(t, dbtest.Raw(t, db), "UPDATE log_leaves SET content = NULL",
		"DELETE FROM bun_migrations WHERE name >= '20261202000001'")

	logger := slog.New(slog.NewTextHandler(&syncbuffer.Buffer{}, nil))
	_, _, err = openServedStore(ctx, Config{DB: db}, logger, 100*time.Millisecond)
	want := "migrate " + db + ": the migration 20261202000001 (leaf format v1: a salt for every event, the log's leaves rebuilt, its checkpoints signed again) " +
		"did not finish within the 100ms serve gives it at start-up; run flagadmin migrate first, with the same --db"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a rebuild cut by the bound: got %v, want one line starting %q", err, want)
	}
	if code, stdout, errOut := runCLI(t, nil, "migrate", "--db", db); code != 0 || !strings.Contains(stdout, "rebuilt 20000 of 20000 leaves") {
		t.Fatalf("migrate after the cut: exit %d\n%s%s", code, stdout, errOut)
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
