package bunstore

import (
	"context"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestVersionStartsAtCreation checks the change counter of a new
// database: its rows are there, it starts at the time the schema was made
// (so that a database made again never shows a version below the readings
// of the one before), and writes raise it.
func TestVersionStartsAtCreation(t *testing.T) {
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"SQLite", dbtest.SQLite}, {"Postgres", dbtest.Postgres}, {"MySQL", dbtest.MySQL}} {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			url := e.url(t)
			made := time.Now().Add(-time.Second).UnixMilli() // MySQL's clock may lag a little
			s, err := Open(ctx, url)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			n, err := s.db.NewSelect().Table("store_versions").Count(ctx)
			if err != nil {
				t.Fatalf("count store_versions: %v", err)
			}
			if n != versionShards+1 {
				t.Errorf("rows of store_versions: got %d, want %d (the writers' and retention's)", n, versionShards+1)
			}
			v, err := s.Version(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v < made || v > time.Now().UnixMilli()+1000 {
				t.Errorf("version of a new database: got %d, want the Unix milliseconds of its creation, about %d", v, made)
			}
			err = s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureUpdated, CreatedBy: "test", CreatedAt: time.Now()}}})
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if got, err := s.Version(ctx); err != nil || got != v+1 {
				t.Errorf("version after a write: got %d (%v), want %d", got, err, v+1)
			}
		})
	}
}
