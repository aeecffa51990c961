package bunstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// BenchmarkVersion times Store.Version, which the Service's result cache
// reads before every cached answer, on SQLite, PostgreSQL and MySQL (the
// servers skipped when not configured), after 1000 write transactions have
// spread over the counter's rows: one caller at a time, and parallel
// callers. "select-1" is the floor: a constant statement on the same pool.
func BenchmarkVersion(b *testing.B) {
	ctx := context.Background()
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			store, err := bunstore.Open(ctx, e.url(b))
			if err != nil {
				b.Fatalf("Open: %v", err)
			}
			b.Cleanup(func() { store.Close() })
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range 1000 {
				ev := flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "bench", CreatedAt: start.Add(time.Duration(i) * time.Millisecond)}
				if err := store.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{ev}}); err != nil {
					b.Fatalf("Write: %v", err)
				}
			}
			b.Run("version", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := store.Version(ctx); err != nil {
						b.Fatalf("Version: %v", err)
					}
				}
			})
			b.Run("version-parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := store.Version(ctx); err != nil {
							b.Errorf("Version: %v", err)
							return
						}
					}
				})
			})
			b.Run("select-1", func(b *testing.B) {
				db := bunstore.DB(store).DB
				for b.Loop() {
					var one int
					if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
						b.Fatalf("SELECT 1: %v", err)
					}
				}
			})
		})
	}
}
