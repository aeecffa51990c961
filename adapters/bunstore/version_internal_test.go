package bunstore

import (
	"context"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestVersionsMigrationDownAndUp undoes migration store_versions and applies
// it again, twice (as after a failure part-way): the table comes back with
// its rows, the version does not restart below the time of the Up, and
// writes raise it again.
func TestVersionsMigrationDownAndUp(t *testing.T) {
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"SQLite", dbtest.SQLite}, {"Postgres", dbtest.Postgres}, {"MySQL", dbtest.MySQL}} {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, e.url(t))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			write := func() {
				t.Helper()
				err := s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureUpdated, CreatedBy: "test", CreatedAt: time.Now()}}})
				if err != nil {
					t.Fatalf("Write: %v", err)
				}
			}
			version := func() int64 {
				t.Helper()
				v, err := s.Version(ctx)
				if err != nil {
					t.Fatalf("Version: %v", err)
				}
				return v
			}
			write()
			version()

			if err := unmigrateVersions(ctx, s.db); err != nil {
				t.Fatalf("Down: %v", err)
			}
			if _, err := s.Version(ctx); err == nil {
				t.Fatal("Version after Down: got no error, want one (no table)")
			}
			upAt := time.Now().UnixMilli()
			for i := range 2 {
				if err := migrateVersions(ctx, s.db); err != nil {
					t.Fatalf("Up %d: %v", i+1, err)
				}
			}
			n, err := s.db.NewSelect().Table("store_versions").Count(ctx)
			if err != nil {
				t.Fatalf("count store_versions: %v", err)
			}
			if n != versionShards {
				t.Errorf("rows of store_versions: got %d, want %d", n, versionShards)
			}
			v := version()
			if v < upAt {
				t.Errorf("version after Up: got %d, want at least the Up's Unix milliseconds %d", v, upAt)
			}
			write()
			if got := version(); got <= v {
				t.Errorf("version after a write: got %d, want more than %d", got, v)
			}
		})
	}
}
